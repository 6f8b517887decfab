#!/usr/bin/env node
// Independent loader for tokenizers crosslab trains (core/tokenizer/bpe_trainer):
// @lenml/tokenizers (a port of transformers.js) reads DIR/tokenizer.json and
// DIR/tokenizer_config.json and encodes each corpus line.
//
//   node tok_any.mjs DIR CORPUS.jsonl OUT.jsonl
//
// CORPUS: one JSON string per line. OUT: one JSON list of ids per line, with
// <|begin_of_text|> (add_special_tokens) and special-token text mapped to its id.
import fs from "node:fs";
import path from "node:path";
import {TokenizerLoader} from "@lenml/tokenizers";

const [dir, corpus, out] = process.argv.slice(2);
if (!dir || !corpus || !out) {
    console.error("usage: node tok_any.mjs DIR CORPUS.jsonl OUT.jsonl");
    process.exit(2);
}
const load = (f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
const tokenizer = TokenizerLoader.fromPreTrained({
    tokenizerJSON: load("tokenizer.json"),
    tokenizerConfig: load("tokenizer_config.json"),
});
const lines = fs.readFileSync(corpus, "utf8").split("\n").filter((l) => l.length > 0);
const ids = lines.map((l) => JSON.stringify(Array.from(tokenizer.encode(JSON.parse(l), {add_special_tokens: true}))));
fs.writeFileSync(out, ids.join("\n") + "\n");
