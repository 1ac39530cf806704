// The OpenAI-compatible API on an HttpServer: routes, authentication, limits, errors and
// metrics around the engine (generation) and the embedding engine (embeddings).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "http_server.h"
#include "metrics.h"
#include "openai_request.h"
#include "wick/models/language_model.h"
#include "wick/serve/embedding_engine.h"
#include "wick/serve/engine.h"

namespace wick::serve {

struct AppOptions {
  std::string model_id;      // what /v1/models lists and requests must name
  std::string embedding_id;  // "" without an embedding model
  std::string api_key;       // "" accepts every request
  size_t max_body_bytes = 8u << 20;
  int retry_after_seconds = 1;  // Retry-After of a 429 (queue full)
  // CORS: the browser origin (scheme://host[:port]) whose pages may call the API, or "*" for
  // any; "" (the default) sends no CORS headers, so browsers keep pages of other origins out.
  std::string cors_origin;
};

class App {
 public:
  // The model and the engines (the embedding one may be null) must outlive the App.
  App(const models::LanguageModel& lm, Engine& engine, EmbeddingEngine* embedder, AppOptions options);
  void install(HttpServer& server);
  // From now on new generation requests are refused with 503 and /health says so.
  void begin_shutdown() { shutting_down_ = true; }

  // The request's endpoint for metrics: a served path or "other".
  static std::string endpoint_label(const std::string& path);

 private:
  void embeddings(const httplib::Request& req, httplib::Response& res);
  void models(httplib::Response& res) const;

  const models::LanguageModel& lm_;
  Engine& engine_;
  EmbeddingEngine* embedder_;
  AppOptions opt_;
  Metrics metrics_;
  std::atomic<bool> shutting_down_{false};
  std::atomic<uint64_t> next_id_{1};
  int64_t created_;  // Unix time of start: /v1/models' "created"
};

}  // namespace wick::serve
