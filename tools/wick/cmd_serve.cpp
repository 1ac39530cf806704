// `wick serve`: the OpenAI-compatible HTTP server (tools/wick/serve/, docs/serve.md). One
// model generates for many clients at once through the continuous-batching engine
// (wick/serve/engine.h); an optional sentence-embedding model answers /v1/embeddings.
//
// stderr: the load progress, then "wick serve: listening on http://HOST:PORT" once requests
// are accepted. SIGINT / SIGTERM: stop accepting, let requests in flight finish for up to
// --shutdown-timeout seconds (then cancel them), exit 0.
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "model_args.h"
#include "serve/app.h"
#include "serve/http_server.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {
struct ServeArgs {
  ModelArgs model;
  std::string embedding_model, host = "127.0.0.1", api_key, ssl_cert_file, ssl_key_file, cors_origin;
  int port = 8080;
  int64_t parallel = 4, max_queue = 64;
  int64_t kv_block_size = 16, kv_blocks = 0;  // 0: parallel x ceil(ctx / block size)
  double timeout = 30, shutdown_timeout = 10;
  int64_t max_body = 8 << 20;
  int64_t max_connections = 2048;
  int64_t max_embedding_tokens = 65536;
  int64_t embedding_batch_tokens = 0;  // 0: by device (kEmbeddingBatchTokens*)
  SamplingArgs speculative;            // only --spec and its options (requests say how to sample)
};

// Padded tokens per embedding forward. On the CPU, 1024 (about 0.12 s for MiniLM on 2 cores)
// was the fastest measured (256: 213, 1024: 279, 4096: 274 texts/s of 32 tokens, 8 clients),
// and a cancelled request stops, and a new one joins, within about one such forward. On a GPU
// a forward must be much larger to fill it.
constexpr int64_t kEmbeddingBatchTokensCpu = 1024, kEmbeddingBatchTokensCuda = 16384;

// What requests name the model by: the file name of a GGUF, the folder name of a checkpoint.
std::string model_id(const std::filesystem::path& p) {
  const std::filesystem::path clean = p.lexically_normal();
  const std::string name = (clean.has_filename() ? clean : clean.parent_path()).filename().string();
  return name.empty() ? p.string() : name;
}

// 127.0.0.0/8, ::1 and localhost: only this machine reaches them.
bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

int g_signal_pipe[2] = {-1, -1};
void on_signal(int sig) {
  const char c = char(sig);
  (void)!::write(g_signal_pipe[1], &c, 1);
}

std::chrono::milliseconds millis(double s) { return std::chrono::milliseconds(int64_t(s * 1000)); }

// Each open connection is a file descriptor: the soft limit (often 1024) is raised to the hard
// one, and what it allows bounds --max-connections (less some for the model's files).
int64_t open_files_allowed() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return 1024;
  if (r.rlim_cur < r.rlim_max) {
    rlimit raised = r;
    raised.rlim_cur = r.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
  }
  return r.rlim_cur == RLIM_INFINITY ? int64_t(1) << 20 : int64_t(std::min<rlim_t>(r.rlim_cur, rlim_t(1) << 20));
}

int run_serve(const ServeArgs& a) {
  as_usage_error([&] {
    WICK_CHECK(a.parallel >= 1 && a.parallel <= 4096, InvalidArgument, "serve: --parallel must be in [1, 4096], got ",
               a.parallel);
    WICK_CHECK(a.kv_block_size >= 1 && a.kv_block_size <= 4096, InvalidArgument,
               "serve: --kv-block-size must be in [1, 4096], got ", a.kv_block_size);
    WICK_CHECK(a.kv_blocks >= 0 && a.kv_blocks <= (int64_t(1) << 30), InvalidArgument,
               "serve: --kv-blocks must be in [0, 2^30], got ", a.kv_blocks);
    check_speculative_args(a.speculative, "serve");
    WICK_CHECK(a.max_queue >= 0 && a.max_queue <= 1'000'000, InvalidArgument,
               "serve: --max-queue must be in [0, 1000000], got ", a.max_queue);
    WICK_CHECK(a.timeout >= 0.1 && a.timeout <= 86400, InvalidArgument,
               "serve: --timeout must be in [0.1, 86400] s, got ", a.timeout);
    WICK_CHECK(a.shutdown_timeout >= 0 && a.shutdown_timeout <= 86400, InvalidArgument,
               "serve: --shutdown-timeout must be in [0, 86400] s, got ", a.shutdown_timeout);
    WICK_CHECK(a.port >= 0 && a.port <= 65535, InvalidArgument, "serve: --port must be in [0, 65535], got ", a.port);
    // A bound, never "no limit": bodies are held in memory whole.
    WICK_CHECK(a.max_body >= 1 && a.max_body <= (int64_t(1) << 30), InvalidArgument,
               "serve: --max-body must be in [1, 1073741824] bytes, got ", a.max_body);
    WICK_CHECK(a.max_connections >= 1 && a.max_connections <= 1'000'000, InvalidArgument,
               "serve: --max-connections must be in [1, 1000000], got ", a.max_connections);
    WICK_CHECK(a.ssl_cert_file.empty() == a.ssl_key_file.empty(), InvalidArgument,
               "serve: --ssl-cert-file and --ssl-key-file go together (HTTPS needs both)");
    WICK_CHECK(a.cors_origin.find_first_of("\r\n") == std::string::npos, InvalidArgument,
               "serve: --cors-origin must be one origin (scheme://host[:port]) or *");
    WICK_CHECK(a.max_embedding_tokens >= 1 && a.max_embedding_tokens <= (int64_t(1) << 24), InvalidArgument,
               "serve: --max-embedding-tokens must be in [1, 16777216], got ", a.max_embedding_tokens);
    WICK_CHECK(a.embedding_batch_tokens >= 0 && a.embedding_batch_tokens <= (int64_t(1) << 20), InvalidArgument,
               "serve: --embedding-batch-tokens must be in [0, 1048576] (0: by device), got ",
               a.embedding_batch_tokens);
  });
  // SIGINT/SIGTERM only wake the thread that shuts down (below), through a pipe: a handler
  // may run on any thread (OpenBLAS starts its own before main), and write() is one of the
  // few calls a handler may make.
  WICK_CHECK(::pipe(g_signal_pipe) == 0, Io, "serve: cannot create a pipe: ", std::strerror(errno));
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error return, not a death

  // glibc gives threads that allocate at once arenas of their own (up to 8 per core) and
  // keeps what each frees: under mixed load the server's resident memory climbed from 211 to
  // 533 MB without a leak, and stays flat with two arenas. MALLOC_ARENA_MAX, when set, wins.
  if (!std::getenv("MALLOC_ARENA_MAX")) ::mallopt(M_ARENA_MAX, 2);
  // The server (and its certificate) before the model: a bad --ssl-cert-file fails at once.
  serve::HttpLimits limits;
  limits.request_timeout = limits.io_timeout = millis(a.timeout);
  limits.header_timeout = std::min(limits.header_timeout, limits.request_timeout);
  limits.max_body_bytes = size_t(a.max_body);
  limits.max_connections = size_t(std::min<int64_t>(a.max_connections, open_files_allowed() - 64));
  // Workers answer whole requests (the reactor reads them): the running and queued
  // generations (and as many embedding requests), and room for the rest (/health, /metrics,
  // refusals).
  limits.threads = size_t((a.parallel + a.max_queue) * (a.embedding_model.empty() ? 1 : 2) + 16);
  serve::HttpServer server(limits);
  const bool tls = !a.ssl_cert_file.empty();
  if (tls) server.enable_tls(a.ssl_cert_file, a.ssl_key_file);
  // The draft first: a usage error in its options comes before the target loads.
  const std::optional<models::LanguageModel> draft = load_draft(a.model, a.speculative, "serve");
  const models::LanguageModel lm = load_model(a.model, "serve");
  std::unique_ptr<models::SentenceEmbedder> embedder;
  std::string embedding_id;
  if (!a.embedding_model.empty()) {
    // "minilm": the all-MiniLM-L6-v2 package that scripts/setup.sh installs.
    const std::filesystem::path dir = a.embedding_model == "minilm" ? models::SentenceEmbedder::find_installed_minilm()
                                                                    : std::filesystem::path(a.embedding_model);
    embedder = std::make_unique<models::SentenceEmbedder>(models::SentenceEmbedder::load(dir, lm.model().device()));
    embedding_id = a.embedding_model == "minilm" ? "all-MiniLM-L6-v2" : model_id(dir);
  }
  serve::EngineOptions eo;
  eo.parallel = a.parallel;
  eo.ctx_size = a.model.ctx_size;
  eo.max_queue = a.max_queue;
  eo.block_size = a.kv_block_size;
  eo.kv_blocks = a.kv_blocks;
  eo.speculative = speculative_options(a.speculative, draft);
  eo.tokens = std::make_shared<const text::TokenTable>(lm.tokenizer());  // for constrained requests
  serve::Engine engine(lm.model(), eo);

  serve::AppOptions ao;
  ao.model_id = model_id(model_path(a.model, "serve"));
  ao.embedding_id = embedding_id;
  ao.api_key = a.api_key;
  ao.max_body_bytes = size_t(a.max_body);
  ao.cors_origin = a.cors_origin;
  std::unique_ptr<serve::EmbeddingEngine> embedding_engine;
  if (embedder) {
    serve::EmbeddingOptions emo;
    emo.batch_tokens = size_t(a.embedding_batch_tokens        ? a.embedding_batch_tokens
                              : lm.model().device().is_cuda() ? kEmbeddingBatchTokensCuda
                                                              : kEmbeddingBatchTokensCpu);
    emo.max_request_tokens = size_t(a.max_embedding_tokens);
    emo.max_queue = size_t(a.parallel + a.max_queue);
    embedding_engine = std::make_unique<serve::EmbeddingEngine>(*embedder, emo);
  }
  serve::App app(lm, engine, embedding_engine.get(), ao);

  app.install(server);
  const int port = server.bind(a.host, a.port);
  WICK_CHECK(port > 0, Io, "serve: cannot listen on ", a.host, ":", a.port,
             " (in use, or not an address of this host)");
  std::fprintf(stderr, "wick serve: %s (%s on %s), listening on %s://%s:%d\n", ao.model_id.c_str(),
               lm.architecture().c_str(), lm.model().device().str().c_str(), tls ? "https" : "http", a.host.c_str(),
               port);
  // Other machines can reach a non-loopback address: say what they could do.
  if (!is_loopback(a.host)) {
    if (!tls)
      std::fprintf(stderr,
                   "wick serve: warning: %s is reachable from other machines and this server speaks plain HTTP: "
                   "requests, answers and the API key travel in clear text (--ssl-cert-file/--ssl-key-file)\n",
                   a.host.c_str());
    if (a.api_key.empty())
      std::fprintf(stderr,
                   "wick serve: warning: %s is reachable from other machines and no --api-key is set: anyone "
                   "who reaches the port can use the model\n",
                   a.host.c_str());
  }

  std::thread stopper([&] {
    char sig = 0;
    while (::read(g_signal_pipe[0], &sig, 1) < 0 && errno == EINTR) {
    }
    if (sig) std::fprintf(stderr, "wick serve: %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    app.begin_shutdown();
    server.stop_accepting();
    engine.shutdown(millis(a.shutdown_timeout));
  });
  // glibc keeps what is freed inside its heaps, and tensors of ever-changing sizes fragment
  // them: resident memory crept from 333 to 396 MB over a 5-minute soak. malloc_trim gives
  // the free pages back; every 2 s it costs little, where a fixed mmap threshold (flat too)
  // cost 12% of embedding throughput in page faults.
  std::mutex trim_mu;
  std::condition_variable trim_cv;
  bool trim_stop = false;
  std::thread trimmer([&] {
    std::unique_lock lk(trim_mu);
    while (!trim_cv.wait_for(lk, std::chrono::seconds(2), [&] { return trim_stop; })) ::malloc_trim(0);
  });
  server.serve();            // returns once the listening socket is shut and every connection closed
  if (!server.stopping()) {  // the accept loop failed: shut down all the same
    const char none = 0;
    (void)!::write(g_signal_pipe[1], &none, 1);
  }
  stopper.join();
  {
    std::lock_guard lk(trim_mu);
    trim_stop = true;
  }
  trim_cv.notify_all();
  trimmer.join();
  const serve::EngineStats st = engine.stats();
  if (st.drafted_tokens > 0)
    std::fprintf(stderr, "wick serve: speculative (%s): %llu drafted, %llu accepted (%.1f%%)\n",
                 a.speculative.spec.c_str(), (unsigned long long)st.drafted_tokens,
                 (unsigned long long)st.accepted_tokens,
                 100.0 * double(st.accepted_tokens) / double(st.drafted_tokens));
  std::fprintf(stderr, "wick serve: stopped\n");
  return 0;
}
}  // namespace

Runner add_serve(CLI::App& app) {
  auto* sub = app.add_subcommand("serve", "Serve a model over HTTP with OpenAI's API (completions, chat, embeddings)");
  auto a = std::make_shared<ServeArgs>();
  add_model_options(sub, a->model);
  sub->add_option("--embedding-model", a->embedding_model,
                  "a sentence-embedding folder (MiniLM) for /v1/embeddings, or \"minilm\": the installed package");
  sub->add_option("--host", a->host, "address to listen on")->capture_default_str();
  sub->add_option("--port", a->port, "port to listen on (0: any free one, printed on stderr)")->capture_default_str();
  sub->add_option("--parallel", a->parallel, "sequences generated at once")->capture_default_str();
  sub->add_option("--kv-block-size", a->kv_block_size, "positions per block of the paged KV cache")
      ->capture_default_str();
  add_speculative_options(sub, a->speculative, /*draft_model=*/true);
  sub->add_option("--kv-blocks", a->kv_blocks,
                  "blocks of the KV cache, shared by all sequences and the prefix cache (0: enough for --parallel "
                  "sequences of --ctx-size)")
      ->capture_default_str();
  sub->add_option("--max-queue", a->max_queue, "requests waiting for a slot at most; more are answered 429")
      ->capture_default_str();
  sub->add_option(
      "--api-key", a->api_key,
      "require Authorization: Bearer KEY (the scheme in any case) on every endpoint but /health and /openapi.json");
  sub->add_option("--timeout", a->timeout,
                  "seconds a client has to send a whole request (its headers: 10 at most), or may stall a write")
      ->capture_default_str();
  sub->add_option("--shutdown-timeout", a->shutdown_timeout,
                  "on SIGINT/SIGTERM, seconds requests in flight may take to finish before they are cancelled")
      ->capture_default_str();
  sub->add_option("--max-body", a->max_body, "request body bytes at most, in [1, 1 GiB] (413 beyond)")
      ->capture_default_str();
  sub->add_option("--ssl-cert-file", a->ssl_cert_file,
                  "serve HTTPS with this PEM certificate chain (with --ssl-key-file)");
  sub->add_option("--ssl-key-file", a->ssl_key_file, "the PEM private key of --ssl-cert-file (no passphrase)");
  sub->add_option("--cors-origin", a->cors_origin,
                  "let browser pages of this origin (scheme://host[:port], or * for any) call the API (CORS); "
                  "none by default");
  sub->add_option("--max-embedding-tokens", a->max_embedding_tokens,
                  "tokens of one /v1/embeddings request at most, over all its inputs (400 beyond)")
      ->capture_default_str();
  sub->add_option("--embedding-batch-tokens", a->embedding_batch_tokens,
                  "padded tokens per embedding forward (bounds how late a cancel takes effect); 0: 1024 on the CPU, "
                  "16384 on a GPU")
      ->capture_default_str();
  sub->add_option("--max-connections", a->max_connections,
                  "open client connections at most (503 beyond; bounded by the open-files limit)")
      ->capture_default_str();
  return [a]() -> int { return run_serve(*a); };
}

}  // namespace wick::cli
