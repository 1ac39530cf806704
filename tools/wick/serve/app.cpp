#include "app.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>

#include "api_error.h"
#include "generation.h"
#include "openai_response.h"
#include "openapi_document.h"
#include "request_json.h"

namespace wick::serve {

namespace {

constexpr std::array<const char*, 7> kEndpoints = {
    "/v1/completions", "/v1/chat/completions", "/v1/embeddings", "/v1/models", "/health", "/metrics", "/openapi.json"};

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

// The connection closes after this response, which says so: whatever of the request is left
// unread (a body, the rest of a malformed request) must not be taken for the next request.
void close_after(httplib::Response& res) {
  if (Connection* c = current_connection()) c->close_after_response();
  res.set_header("Connection", "close");
}

// Refuses a request before its body is read, closing the connection after the answer.
httplib::Server::HandlerResponse refuse(httplib::Response& res, const ApiError& e) {
  close_after(res);
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

// An Authorization header that carries `key` as a bearer token. The scheme's name is
// case-insensitive (RFC 9110 11.1: "bearer KEY" is as good as "Bearer KEY"); the key is not.
bool authorized(const std::string& header, const std::string& key) {
  const size_t space = header.find(' ');
  std::string scheme = header.substr(0, space);
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  const size_t start = space == std::string::npos ? std::string::npos : header.find_first_not_of(' ', space);
  const std::string token = start == std::string::npos ? "" : header.substr(start);
  const bool key_ok = same_secret(token, key);  // compared whatever the scheme: the time tells nothing
  return scheme == "bearer" && key_ok;
}

// A request whose method never reads a body (every endpoint but the POST ones) that still
// announces one: the body stays unread, so the connection closes after the answer.
bool unread_body(const httplib::Request& req) {
  if (req.method == "POST" || req.method == "PUT" || req.method == "PATCH" || req.method == "DELETE") return false;
  return req.has_header("Transfer-Encoding") ||
         (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
}

}  // namespace

App::App(const models::LanguageModel& lm, Engine& engine, EmbeddingEngine* embedder, AppOptions options)
    : lm_(lm), engine_(engine), embedder_(embedder), opt_(std::move(options)), created_(std::time(nullptr)) {}

std::string App::endpoint_label(const std::string& path) {
  for (const char* e : kEndpoints)
    if (path == e) return e;
  return "other";
}

void App::install(HttpServer& server) {
  server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (unread_body(req)) close_after(res);
    // CORS, when asked for: an allowed origin's requests are answered with the headers that
    // let its page read the answer, and its preflight (OPTIONS, sent without credentials)
    // is answered here, before the API key is checked.
    if (!opt_.cors_origin.empty() && req.has_header("Origin")) {
      const std::string origin = req.get_header_value("Origin");
      const bool allowed = opt_.cors_origin == "*" || origin == opt_.cors_origin;
      if (allowed) {
        res.set_header("Access-Control-Allow-Origin", opt_.cors_origin == "*" ? "*" : origin);
        if (opt_.cors_origin != "*") res.set_header("Vary", "Origin");
      }
      if (req.method == "OPTIONS" && req.has_header("Access-Control-Request-Method")) {
        if (!allowed)
          return refuse(res, ApiError(403, "CORS: the origin '" + origin.substr(0, 200) + "' is not allowed"));
        res.status = 204;
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
        res.set_header("Access-Control-Max-Age", "600");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    // Bodies are bounded before they are read: a Content-Length over the limit is refused
    // at once, and chunked bodies (whose size nothing announces) are not accepted.
    if (req.has_header("Transfer-Encoding"))
      return refuse(res, ApiError(411, "chunked request bodies are not accepted: send Content-Length"));
    // Two lengths would leave a proxy in front and this server disagreeing on where the
    // request ends (request smuggling, RFC 9112 6.3).
    if (req.get_header_value_count("Content-Length") > 1)
      return refuse(res, ApiError(400, "more than one Content-Length header"));
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
    // multipart/form-data (file uploads) would be parsed by httplib, and no endpoint takes it.
    if (req.get_header_value("Content-Type").rfind("multipart/form-data", 0) == 0)
      return refuse(res, ApiError(415, "multipart/form-data bodies are not accepted: send JSON"));
    if (req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0) {
      auto& headers = const_cast<httplib::Request&>(req).headers;
      headers.erase("Content-Type");
      headers.emplace("Content-Type", "application/json");
    }
    // The health check and the API's description answer without a key.
    if (!opt_.api_key.empty() && req.path != "/health" && req.path != "/openapi.json" &&
        !authorized(req.get_header_value("Authorization"), opt_.api_key))
      return refuse(
          res, ApiError(401, "invalid or missing API key (send Authorization: Bearer KEY)", "", "invalid_api_key"));
    return httplib::Server::HandlerResponse::Unhandled;
  });

  const GenerationContext gen{lm_, engine_, metrics_, opt_.model_id, shutting_down_, opt_.retry_after_seconds};
  for (const auto& [path, endpoint] :
       {std::pair{"/v1/completions", Endpoint::Completions}, std::pair{"/v1/chat/completions", Endpoint::Chat}})
    server.Post(path, guarded([this, gen, endpoint = endpoint](const httplib::Request& req, httplib::Response& res) {
                  serve_generation(gen, req.body, endpoint, next_id_++, res);
                }));
  server.Post("/v1/embeddings",
              guarded([this](const httplib::Request& req, httplib::Response& res) { embeddings(req, res); }));
  server.Get("/v1/models", guarded([this](const httplib::Request&, httplib::Response& res) { models(res); }));
  server.Get("/health", guarded([this](const httplib::Request&, httplib::Response& res) {
               if (shutting_down_) res.status = 503;
               reply_json(res, {{"status", shutting_down_ ? "shutting down" : "ok"}});
             }));
  server.Get("/openapi.json", guarded([](const httplib::Request&, httplib::Response& res) {
               const std::string_view doc = openapi_document();
               res.set_content(doc.data(), doc.size(), "application/json");
             }));
  server.Get("/metrics", guarded([this](const httplib::Request&, httplib::Response& res) {
               const std::optional<EmbeddingStats> emb = embedder_ ? std::optional(embedder_->stats()) : std::nullopt;
               res.set_content(metrics_.render(engine_.stats(), emb ? &*emb : nullptr),
                               "text/plain; version=0.0.4; charset=utf-8");
             }));

  // What httplib answers itself (unknown paths, unparsable requests) in the same JSON. But
  // for an unknown path (whose body, if any, was read), each of these means the request was
  // not read to its end (a malformed or over-long request line or header, a method that no
  // route takes), so the connection closes: what follows on it is not a request.
  server.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty() || res.is_chunked_content_provider_) return httplib::Server::HandlerResponse::Unhandled;
        // The endpoints and the one method each takes: another method on one of them is a 405
        // naming it (RFC 9110 15.5.6), not a 404.
        static const std::map<std::string, std::string, std::less<>> kAllowed = {
            {"/v1/completions", "POST"}, {"/v1/chat/completions", "POST"}, {"/v1/embeddings", "POST"},
            {"/v1/models", "GET, HEAD"}, {"/health", "GET, HEAD"},         {"/openapi.json", "GET, HEAD"},
            {"/metrics", "GET, HEAD"}};
        std::string message;
        const bool read_whole = res.status == 404;  // an unknown path or a known one: the request was read
        if (const auto known = kAllowed.find(req.path); res.status == 404 && known != kAllowed.end()) {
          res.status = 405;
          res.set_header("Allow", known->second);
          message = "method " + req.method + " is not allowed on " + req.path + " (allowed: " + known->second + ")";
        } else if (res.status == 404) {
          message = "no endpoint " + req.method + " " + req.path.substr(0, 200);
        } else if (req.method == "TRACE" || req.method == "CONNECT" || req.method == "PRI") {
          res.status = 405;  // httplib's parser knows these methods; no endpoint takes them
          res.set_header("Allow", "GET, POST");
          message = "method " + req.method + " is not allowed";
        } else if (res.status == 414) {
          message = "request line too long";
        } else if (res.status == 400) {
          message = "malformed HTTP request";
        } else {
          message = "HTTP error " + std::to_string(res.status);
        }
        if (!read_whole) close_after(res);
        reply_error(res, ApiError(res.status, message));
        return httplib::Server::HandlerResponse::Handled;
      }));
  // httplib announces keep-alive on every response it was not told to close; one that will
  // close says only so (this handler runs after those headers are set, before they are sent).
  server.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.get_header_value("Connection") == "close") res.headers.erase("Keep-Alive");
  });
  server.on_refusal([this](int status) { metrics_.count_request("other", status); });
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
  const auto& model = embedder_->model();
  const int64_t dim = model.model().config().hidden_size;
  if (r.dimensions && *r.dimensions != dim)
    throw ApiError(400, "dimensions: this model's embeddings have " + std::to_string(dim) + " dimensions",
                   "dimensions");
  if (shutting_down_) throw ApiError(503, "the server is shutting down");
  // Tokenized here, on the request's own thread (in parallel with other requests), and
  // refused as soon as the budget is passed: a request's cost stays bounded.
  const size_t budget = embedder_->options().max_request_tokens;
  std::vector<std::vector<int32_t>> rows;
  rows.reserve(r.inputs.size());
  size_t tokens = 0;
  for (const auto& text : r.inputs) {
    rows.push_back(model.token_ids(text));
    tokens += rows.back().size();
    if (tokens > budget)
      throw ApiError(400,
                     "input: over " + std::to_string(budget) +
                         " tokens in one request (the server's --max-embedding-tokens); split the input",
                     "input", "context_length_exceeded");
  }
  const std::shared_ptr<EmbeddingJob> job = embedder_->submit(std::move(rows));
  if (!job) {
    if (shutting_down_) throw ApiError(503, "the server is shutting down");
    res.set_header("Retry-After", std::to_string(opt_.retry_after_seconds));
    throw ApiError(429, "the server is busy: its embedding queue is full, retry later", "", "queue_full");
  }
  // The client is watched while its texts are embedded: one who gives up stops the work
  // within a poll and the forward in flight (the engine bounds a forward's tokens).
  Connection* conn = current_connection();
  while (!job->wait_for(std::chrono::milliseconds(10))) {
    if (conn && conn->peer_closed()) {
      metrics_.count_disconnect();  // first: once cancelled, the job may leave the engine at once
      job->cancel();
      throw ApiError(499, "the client closed the connection");
    }
  }
  if (job->cancelled()) throw ApiError(503, "the server is shutting down");
  const Tensor emb = job->result();
  const auto* values = static_cast<const float*>(emb.data());
  reply_json(res, embeddings_response(opt_.embedding_id, std::span(values, size_t(emb.numel())), size_t(dim), r.base64,
                                      job->tokens()));
}

}  // namespace wick::serve
