#include "app.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <ctime>

#include "api_error.h"
#include "generation.h"
#include "openai_response.h"
#include "request_json.h"

namespace wick::serve {

namespace {

constexpr std::array<const char*, 6> kEndpoints = {
    "/v1/completions", "/v1/chat/completions", "/v1/embeddings", "/v1/models", "/health", "/metrics"};

void reply_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(dump(error_body(e)), "application/json");
}

void reply_json(httplib::Response& res, const nlohmann::json& j) { res.set_content(dump(j), "application/json"); }

// Runs a handler with the request read (no read deadline from here on) and every failure
// answered as OpenAI's error JSON.
template <class F>
httplib::Server::Handler guarded(F f) {
  return [f](const httplib::Request& req, httplib::Response& res) {
    if (Connection* c = current_connection()) c->request_read();
    try {
      f(req, res);
    } catch (const ApiError& e) {
      reply_error(res, e);
    } catch (const Error& e) {
      reply_error(res, ApiError(status_of(e), e.what()));
    } catch (const std::exception& e) {
      reply_error(res, ApiError(500, std::string("internal error: ") + e.what()));
    }
  };
}

// Refuses a request before its body is read: the connection is closed after the answer, as
// the unread body would otherwise be taken for the next request.
httplib::Server::HandlerResponse refuse(httplib::Response& res, const ApiError& e) {
  if (Connection* c = current_connection()) c->close_after_response();
  reply_error(res, e);
  return httplib::Server::HandlerResponse::Handled;
}

// Compares in time independent of where the strings differ, so that response times do not
// reveal how much of a guessed key is right.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= uint8_t(a[i]) ^ uint8_t(b[i % std::max<size_t>(b.size(), 1)]);
  return diff == 0 && !b.empty();
}

}  // namespace

App::App(const models::LanguageModel& lm, Engine& engine, const models::SentenceEmbedder* embedder, AppOptions options)
    : lm_(lm), engine_(engine), embedder_(embedder), opt_(std::move(options)), created_(std::time(nullptr)) {}

std::string App::endpoint_label(const std::string& path) {
  for (const char* e : kEndpoints)
    if (path == e) return e;
  return "other";
}

void App::install(HttpServer& server) {
  server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    // Bodies are bounded before they are read: a Content-Length over the limit is refused
    // at once, and chunked bodies (whose size nothing announces) are not accepted.
    if (req.has_header("Transfer-Encoding"))
      return refuse(res, ApiError(411, "chunked request bodies are not accepted: send Content-Length"));
    if (req.has_header("Content-Length")) {
      const std::string v = req.get_header_value("Content-Length");
      char* end = nullptr;
      errno = 0;
      const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end || errno || v[0] == '-')
        return refuse(res, ApiError(400, "Content-Length is not a number: '" + v.substr(0, 40) + "'"));
      if (n > opt_.max_body_bytes)
        return refuse(res, ApiError(413, "request body of " + std::to_string(n) + " bytes exceeds the limit of " +
                                             std::to_string(opt_.max_body_bytes)));
    }
    // Every body is JSON whatever its Content-Type says (as OpenAI's API reads it), and
    // httplib parses application/x-www-form-urlencoded ones, what `curl -d` sends, itself,
    // refusing those over 8 KiB with a bare 413. The request object is httplib's own
    // (non-const) one, handed here by const reference.
    if (req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0) {
      auto& headers = const_cast<httplib::Request&>(req).headers;
      headers.erase("Content-Type");
      headers.emplace("Content-Type", "application/json");
    }
    if (!opt_.api_key.empty() && req.path != "/health" &&
        !same_secret(req.get_header_value("Authorization"), "Bearer " + opt_.api_key))
      return refuse(
          res, ApiError(401, "invalid or missing API key (send Authorization: Bearer KEY)", "", "invalid_api_key"));
    return httplib::Server::HandlerResponse::Unhandled;
  });

  const GenerationContext gen{lm_, engine_, metrics_, opt_.model_id, shutting_down_, opt_.retry_after_seconds};
  for (const auto& [path, endpoint] :
       {std::pair{"/v1/completions", Endpoint::Completions}, std::pair{"/v1/chat/completions", Endpoint::Chat}})
    server.Post(path, guarded([this, gen, endpoint = endpoint](const httplib::Request& req, httplib::Response& res) {
                  serve_generation(gen, parse_request_body(req.body), endpoint, next_id_++, res);
                }));
  server.Post("/v1/embeddings",
              guarded([this](const httplib::Request& req, httplib::Response& res) { embeddings(req, res); }));
  server.Get("/v1/models", guarded([this](const httplib::Request&, httplib::Response& res) { models(res); }));
  server.Get("/health", guarded([this](const httplib::Request&, httplib::Response& res) {
               if (shutting_down_) res.status = 503;
               reply_json(res, {{"status", shutting_down_ ? "shutting down" : "ok"}});
             }));
  server.Get("/metrics", guarded([this](const httplib::Request&, httplib::Response& res) {
               res.set_content(metrics_.render(engine_.stats()), "text/plain; version=0.0.4; charset=utf-8");
             }));

  // What httplib answers itself (unknown paths, unparsable requests) in the same JSON.
  server.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty() || res.is_chunked_content_provider_) return httplib::Server::HandlerResponse::Unhandled;
        const std::string message = res.status == 404   ? "no endpoint " + req.method + " " + req.path.substr(0, 200)
                                    : res.status == 400 ? "malformed HTTP request"
                                                        : "HTTP error " + std::to_string(res.status);
        reply_error(res, ApiError(res.status, message));
        return httplib::Server::HandlerResponse::Handled;
      }));
  server.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics_.count_request(endpoint_label(req.path), res.status);
  });
}

void App::models(httplib::Response& res) const {
  nlohmann::json data = nlohmann::json::array();
  for (const std::string& id : {opt_.model_id, opt_.embedding_id})
    if (!id.empty()) data.push_back({{"id", id}, {"object", "model"}, {"created", created_}, {"owned_by", "wick"}});
  reply_json(res, {{"object", "list"}, {"data", data}});
}

void App::embeddings(const httplib::Request& req, httplib::Response& res) {
  const EmbeddingRequest r = parse_embedding_request(parse_request_body(req.body));
  if (!embedder_)
    throw ApiError(404, "no embedding model is loaded (start wick serve with --embedding-model)", "model",
                   "model_not_found");
  if (!r.model.empty() && r.model != opt_.embedding_id)
    throw ApiError(404,
                   "the model '" + r.model + "' does not exist: this server embeds with '" + opt_.embedding_id + "'",
                   "model", "model_not_found");
  int64_t tokens = 0;
  for (const auto& text : r.inputs) tokens += int64_t(embedder_->token_ids(text).size());
  Tensor emb;
  {
    std::lock_guard lock(embed_mu_);
    emb = embedder_->embed(r.inputs);
  }
  const size_t dim = size_t(emb.dim(1));
  if (r.dimensions && size_t(*r.dimensions) != dim)
    throw ApiError(400, "dimensions: this model's embeddings have " + std::to_string(dim) + " dimensions",
                   "dimensions");
  const std::vector<float> values = emb.to_vector<float>();
  reply_json(res, embeddings_response(opt_.embedding_id, values, dim, r.base64, tokens));
}

}  // namespace wick::serve
