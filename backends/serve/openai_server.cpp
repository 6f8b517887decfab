#include "backends/serve/openai_server.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <random>
#include <thread>

#include <sys/socket.h>

#include "backends/serve/api_error.h"
#include "backends/serve/connection_socket.h"
#include "backends/serve/engine_metrics.h"
#include "backends/serve/openai_request.h"
#include "backends/serve/sse_stream.h"
#include "backends/serve/sse_writer.h"
#include "core/infer/batch_scheduler.h"

namespace crosslab::serve {
namespace {

using nlohmann::json;
using sse::Channel, sse::Event, sse::Meta, sse::SseStream, sse::SseWriter;
using sse::chunk, sse::dumpText, sse::frame, sse::stopReasonJson, sse::textChoice, sse::usageJson;

std::string randomId(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[33];
  snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(rng()), static_cast<unsigned long long>(rng()));
  return std::string(prefix) + hex;
}

void sendError(httplib::Response& res, int status, const std::string& type, const std::string& message,
               const std::string& param = {}) {
  res.status = status;
  res.set_content(errorBody(status, type, message, param), "application/json");
}

}  // namespace

struct OpenAiServer::Impl {
  infer::BatchScheduler& engine;
  ServerOptions opt;
  httplib::Server http;
  int listenSocket = -1;  // seen in the socket-options hook, to widen the listen backlog
  std::atomic<bool> stopRequested{false}, runEntered{false}, runExited{false};
  int64_t started = std::time(nullptr);
  // Every streaming response's frames. Shared: the scheduler's hooks hold it weakly, so a
  // server destroyed before its scheduler leaves them nothing to call.
  std::shared_ptr<SseWriter> writer;

  Impl(infer::BatchScheduler& e, ServerOptions o)
      : engine(e), opt(std::move(o)), writer(std::make_shared<SseWriter>(opt.streamInterval, opt.streamMaxHoldMs, opt.lowPriorityWriter, opt.notice)) {}
  void routes();
  std::string adapterFor(const std::string& model) const;
  // `wake` (may be empty) runs after the request's end is queued.
  std::shared_ptr<Channel> submit(OpenAiRequest& req, const std::string& adapter, std::function<void()> wake);
  void complete(const httplib::Request& q, httplib::Response& res, bool chat);
  // `socket`: the connection's, to notice a client that hangs up meanwhile (-1: unknown).
  void respondWhole(httplib::Response& res, const Meta& meta, Channel& ch, int socket);
  void respondStream(httplib::Response& res, const Meta& meta, std::shared_ptr<Channel> ch, bool includeUsage,
                     int socket);
  void models(httplib::Response& res) const;
  bool authorized(const httplib::Request& q) const;
  httplib::Server::Handler guarded(std::function<void(const httplib::Request&, httplib::Response&)> h);
  std::function<void()> pokeWriter() const {
    return [w = std::weak_ptr<SseWriter>(writer)] {
      if (auto p = w.lock()) p->poke();
    };
  }
};

// The one wrapper: every exception a handler throws becomes a JSON error.
httplib::Server::Handler OpenAiServer::Impl::guarded(std::function<void(const httplib::Request&, httplib::Response&)> h) {
  return [h](const httplib::Request& q, httplib::Response& res) {
    try {
      h(q, res);
    } catch (const ApiError& e) {
      sendError(res, e.status(), e.type(), e.what(), e.param());
    } catch (const std::invalid_argument& e) {
      sendError(res, 400, "BadRequestError", e.what());
    } catch (const std::exception& e) {
      sendError(res, 500, "InternalServerError", e.what());
    }
  };
}

bool OpenAiServer::Impl::authorized(const httplib::Request& q) const {
  // Like vLLM's key, ours guards the API (/v1/...), not /health or /metrics.
  if (opt.apiKey.empty() || q.path == "/health" || q.path == "/metrics") return true;
  const std::string want = "Bearer " + opt.apiKey;
  const std::string got = q.get_header_value("Authorization");
  unsigned diff = got.size() != want.size();  // compare every byte: no early exit on the key
  for (size_t i = 0; i < want.size(); ++i) diff |= unsigned(i < got.size() ? got[i] ^ want[i] : 1);
  return diff == 0;
}

std::string OpenAiServer::Impl::adapterFor(const std::string& model) const {
  if (!opt.mergedAdapter.empty()) {
    if (model.empty() || model == opt.mergedAdapter) return {};
  } else {
    if (model.empty() || model == opt.baseModelId) return {};
    for (const auto& name : engine.adapterNames())
      if (name == model) return name;
  }
  throw ApiError(404, "NotFoundError", "The model `" + model + "` does not exist.", "model");
}

std::shared_ptr<Channel> OpenAiServer::Impl::submit(OpenAiRequest& req, const std::string& adapter,
                                                    std::function<void()> wake) {
  infer::ServeRequest gen = std::move(req.gen);
  gen.adapter = adapter;
  if (req.promptIds) {
    gen.prompt = *req.promptIds;
  } else {
    const auto* tok = engine.tokenizer();
    if (!tok) throw ApiError::badRequest("this model has no tokenizer.json: send the prompt as token ids", "prompt");
    gen.prompt = req.chat ? tok->encode(tokenizer::renderLlama3Chat(req.messages), {false, true}) : tok->encode(req.promptText);
  }
  const int room = engine.maxModelLen() - int(gen.prompt.size());
  if (room < 1)
    throw ApiError::badRequest("This model's maximum context length is " + std::to_string(engine.maxModelLen()) +
                                   " tokens. However, your prompt has " + std::to_string(gen.prompt.size()) + " tokens.",
                               req.chat ? "messages" : "prompt");
  gen.maxTokens = req.maxTokens.value_or(room);
  if (req.chat && !gen.ignoreEos)  // the template's end-of-turn words end a reply (ignore_eos: not even those)
    for (const auto& s : tokenizer::llama3StopWords())
      if (auto id = engine.tokenizer()->tokenId(s)) gen.stopIds.push_back(*id);
  auto ch = std::make_shared<Channel>();
  std::weak_ptr<Channel> weak = ch;  // the scheduler must not keep a finished HTTP exchange alive
  gen.onToken = [weak](int32_t, const std::string& text) {
    auto c = weak.lock();
    if (!c || c->gone) return false;
    if (!text.empty()) c->push({false, text, {}});  // the scheduler's after-step hook pokes the writer
    return true;
  };
  gen.onDone = [weak, wake = std::move(wake)](const infer::ServeResult& r) {
    if (auto c = weak.lock()) c->push({true, {}, r});
    if (wake) wake();  // the last frames, also when no step follows (the scheduler stopping)
  };
  try {
    ch->requestId = engine.submit(std::move(gen));
  } catch (const std::invalid_argument& e) {
    throw ApiError::badRequest(e.what());
  } catch (const std::runtime_error& e) {
    throw ApiError(503, "ServiceUnavailableError", e.what());
  }
  return ch;
}

void OpenAiServer::Impl::respondWhole(httplib::Response& res, const Meta& meta, Channel& ch, int socket) {
  auto nextCheck = std::chrono::steady_clock::now();
  for (;;) {
    auto events = ch.take(std::chrono::milliseconds(100));  // a token's event wakes it too
    if (socket >= 0 && std::chrono::steady_clock::now() >= nextCheck) {
      nextCheck = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
      if (peerClosed(socket))  // complete() cancels the request
        throw ApiError(500, "InternalServerError", "the client closed the connection before the reply");
    }
    for (auto& e : events) {
      if (!e.done) continue;
      const infer::ServeResult& r = e.result;
      if (r.finishReason == "error" || r.finishReason == "cancelled")
        throw ApiError(500, "InternalServerError", r.error.empty() ? "the request was cancelled" : r.error);
      json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", r.finishReason}, {"stop_reason", stopReasonJson(r)}};
      if (meta.chat)
        choice["message"] = {{"role", "assistant"}, {"content", r.text}};
      else
        choice["text"] = r.text;
      json body = {{"id", meta.id},
                   {"object", meta.chat ? "chat.completion" : "text_completion"},
                   {"created", meta.created},
                   {"model", meta.model},
                   {"choices", json::array({choice})},
                   {"usage", usageJson(r)}};
      res.set_content(dumpText(body), "application/json");
      return;
    }
  }
}

void OpenAiServer::Impl::respondStream(httplib::Response& res, const Meta& meta, std::shared_ptr<Channel> ch,
                                       bool includeUsage, int socket) {
  auto stream = std::make_shared<SseStream>(meta, ch, includeUsage);
  auto finished = std::make_shared<bool>(false);
  httplib::Response* response = &res;  // it holds the provider, so it outlives each call of it
  const auto provider = [this, stream, finished, socket, response](size_t, httplib::DataSink& sink) {
    // httplib never compresses text/event-stream (can_compress_content_type); were it to, the
    // chunks would have to go through its sink
    if (!response->has_header("Content-Encoding")) stream->rawSocket = socket;
    const auto hungUp = [&] {  // free the slot now: the stream's next write may be far off
      stream->ch->gone = true;
      engine.cancel(stream->ch->requestId);
    };
    SseStream::State state = writer->serve(stream, sink, socket, hungUp);  // blocks while the writer serves it
    while (state == SseStream::State::HandedBack) {  // a slow reader: this thread writes the rest
      bool last = false;
      const std::string out = stream->framesFor(stream->ch->take(std::chrono::milliseconds(200)), &last);
      if ((!out.empty() && !sink.write(out.data(), out.size())) || writer->stopping() ||
          (out.empty() && socket >= 0 && peerClosed(socket)))
        state = SseStream::State::Failed;
      else if (last)
        state = SseStream::State::Finished;
    }
    if (state == SseStream::State::Failed) {
      stream->ch->gone = true;
      return false;
    }
    *finished = true;
    sink.done();
    return true;
  };
  infer::BatchScheduler* engine_ = &engine;
  const auto releaser = [ch, finished, engine_](bool) {
    if (*finished) return;
    ch->gone = true;
    engine_->cancel(ch->requestId);  // frees the slot at the next step even when no token comes
  };
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream", provider, releaser);
}

void OpenAiServer::Impl::complete(const httplib::Request& q, httplib::Response& res, bool chat) {
  OpenAiRequest req = parseOpenAiRequest(q.body, chat);
  const std::string adapter = adapterFor(req.model);
  Meta meta{chat, randomId(chat ? "chatcmpl-" : "cmpl-"), req.model.empty() ? (opt.mergedAdapter.empty() ? opt.baseModelId : opt.mergedAdapter) : req.model,
            int64_t(std::time(nullptr))};
  const bool stream = req.stream, includeUsage = req.includeUsage;
  std::shared_ptr<Channel> ch = stream ? submit(req, adapter, pokeWriter()) : submit(req, adapter, {});
  const int socket = connectionSocket(q);
  if (stream) return respondStream(res, meta, ch, includeUsage, socket);
  try {
    respondWhole(res, meta, *ch, socket);
  } catch (...) {
    engine.cancel(ch->requestId);
    throw;
  }
}

void OpenAiServer::Impl::models(httplib::Response& res) const {
  const auto entry = [&](const std::string& id, const json& parent) {
    return json{{"id", id},           {"object", "model"}, {"created", started}, {"owned_by", "crosslab"},
                {"root", opt.baseModelId}, {"parent", parent}, {"max_model_len", engine.maxModelLen()}};
  };
  json data = json::array();
  if (!opt.mergedAdapter.empty()) {
    data.push_back(entry(opt.mergedAdapter, nullptr));  // base weights with the adapter merged in
  } else {
    data.push_back(entry(opt.baseModelId, nullptr));
    for (const auto& name : engine.adapterNames()) data.push_back(entry(name, opt.baseModelId));
  }
  res.set_content(json{{"object", "list"}, {"data", data}}.dump(), "application/json");
}

void OpenAiServer::Impl::routes() {
  http.set_pre_routing_handler([this](const httplib::Request& q, httplib::Response& res) {
    if (authorized(q)) return httplib::Server::HandlerResponse::Unhandled;
    sendError(res, 401, "AuthenticationError", "Unauthorized");
    return httplib::Server::HandlerResponse::Handled;
  });
  http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& q, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // already a JSON error
    // httplib's own errors (no route, payload too large): the same JSON shape.
    sendError(res, res.status, res.status == 404 ? "NotFoundError" : "BadRequestError",
              res.status == 404 ? "no route " + q.method + " " + q.path
                                : "request rejected (HTTP " + std::to_string(res.status) + ")");
    return httplib::Server::HandlerResponse::Handled;
  }));
  // 200 with an empty body while the scheduler takes requests; 503 with the JSON error
  // when it died on an engine error or is stopped (vLLM answers 503 for a dead engine).
  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    std::string why;
    if (engine.healthy(&why))
      res.status = 200;
    else
      sendError(res, 503, "ServiceUnavailableError", why);
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(prometheusMetrics(engine.stats(), opt.mergedAdapter.empty() ? opt.baseModelId : opt.mergedAdapter),
                    kPrometheusContentType);
  });
  http.Get("/v1/models", guarded([this](const httplib::Request&, httplib::Response& res) { models(res); }));
  http.Post("/v1/completions", guarded([this](const httplib::Request& q, httplib::Response& res) { complete(q, res, false); }));
  http.Post("/v1/chat/completions",
            guarded([this](const httplib::Request& q, httplib::Response& res) { complete(q, res, true); }));
}

int defaultHttpThreads(int maxBatch) { return std::max(256, 4 * maxBatch + 64); }

OpenAiServer::OpenAiServer(infer::BatchScheduler& engine, ServerOptions options)
    : impl_(std::make_unique<Impl>(engine, std::move(options))) {
  if (impl_->opt.httpThreads <= 0) impl_->opt.httpThreads = defaultHttpThreads(engine.stats().kvSlots);
  const size_t threads = size_t(impl_->opt.httpThreads);
  impl_->http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  impl_->http.set_payload_max_length(8u << 20);  // 8 MiB of JSON is far past any context we serve
  // httplib closes a keep-alive connection after 5 requests; a client's pooled connection (the
  // OpenAI SDK's, aiohttp's) then reconnects every fifth request, through an SSH tunnel a new
  // channel each time. nginx's default (keepalive_requests); uvicorn, vLLM's server, sets none.
  impl_->http.set_keep_alive_max_count(kKeepAliveRequests);
  // No Nagle: a streamed chunk goes out at once, not after the client's delayed ACK of the one
  // before (up to 40 ms on Linux). A fresh connection hid it (the receiver ACKs its first
  // segments at once); a kept-alive one streamed 16 tokens at c=32 in one burst after ~45 ms.
  // asyncio sets TCP_NODELAY on every TCP transport, so uvicorn (vLLM's server) streams so too.
  // Set on the listening socket; Linux copies it to each accepted one.
  impl_->http.set_tcp_nodelay(true);
  impl_->http.set_socket_options([this](socket_t sock) {
    httplib::default_socket_options(sock);  // SO_REUSEADDR
    if (const int bytes = impl_->opt.socketSendBuffer; bytes > 0)
      ::setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    impl_->listenSocket = sock;
  });
  impl_->routes();
  impl_->engine.setAfterStep(impl_->pokeWriter());  // a step's tokens: at most one wake of the writer
}

OpenAiServer::~OpenAiServer() { stop(); }

int OpenAiServer::bind() {
  const auto& o = impl_->opt;
  const int port = o.port == 0 ? impl_->http.bind_to_any_port(o.host) : (impl_->http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port <= 0) throw std::runtime_error("cannot listen on " + o.host + ":" + std::to_string(o.port));
  // httplib 0.11 listens with a backlog of 5: a burst of clients (a benchmark opening 64
  // streams at once) overflows it and the kernel resets connections. Linux lets a second
  // listen() on the same socket raise the backlog.
  if (impl_->listenSocket >= 0) ::listen(impl_->listenSocket, SOMAXCONN);
  return port;
}

void OpenAiServer::run() {
  auto& d = *impl_;
  d.runEntered = true;
  if (!d.stopRequested) d.http.listen_after_bind();
  d.runExited = true;
}

int64_t OpenAiServer::streamsHandedBack() const { return impl_->writer->handedBack(); }
int64_t OpenAiServer::streamWrites() const { return impl_->writer->writes(); }
int64_t OpenAiServer::streamWritesToSocket() const { return impl_->writer->socketWrites(); }
int64_t OpenAiServer::writerHandoffs() const { return impl_->writer->handoffsToHigh(); }

void OpenAiServer::stop() {
  // httplib's stop() does nothing until listen_after_bind() has started (a SIGTERM that
  // arrives while the model loads): run() sees the request and returns, or stop() waits
  // for the accept loop to be running before it stops it (seq_cst: one of the two wins).
  auto& d = *impl_;
  d.stopRequested = true;
  d.engine.setAfterStep({});
  d.writer->stop();  // streams end (their connection threads wait on the writer)
  if (d.runEntered)
    while (!d.http.is_running() && !d.runExited) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  d.http.stop();
}

}  // namespace crosslab::serve
