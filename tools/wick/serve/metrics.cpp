#include "metrics.h"

#include <array>
#include <charconv>

namespace wick::serve {

namespace {
// The shortest text that reads back as x (0.005, not 0.0050000000000000001), as Prometheus'
// own clients write numbers; integers without a fraction.
std::string number(double x) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void sample(std::string& out, std::string_view name, double value, std::string_view labels = {}) {
  out.append(name);
  if (!labels.empty()) out.append("{").append(labels).append("}");
  out.append(" ").append(number(value)).append("\n");
}

// Time to first token spans queueing and prefill (milliseconds to many seconds); the gap
// between tokens is one batched step (sub-millisecond on a tiny model to ~100 ms).
std::vector<double> ttft_bounds() { return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}; }
std::vector<double> itl_bounds() { return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}; }
}  // namespace

void Histogram::observe(double x) {
  size_t i = 0;
  while (i < bounds_.size() && x > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += x;
  ++count_;
}

void Histogram::write(std::string& out, std::string_view name) const {
  const std::string bucket = std::string(name) + "_bucket";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    sample(out, bucket, double(cumulative), "le=\"" + le + "\"");
  }
  sample(out, std::string(name) + "_sum", sum_);
  sample(out, std::string(name) + "_count", double(count_));
}

Metrics::Metrics() : ttft_(ttft_bounds()), itl_(itl_bounds()) {}

void Metrics::count_request(std::string_view endpoint, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{std::string(endpoint), status}];
}
void Metrics::observe_time_to_first_token(double s) {
  std::lock_guard lock(mu_);
  ttft_.observe(s);
}
void Metrics::observe_inter_token_latency(double s) {
  std::lock_guard lock(mu_);
  itl_.observe(s);
}
void Metrics::count_disconnect() {
  std::lock_guard lock(mu_);
  ++disconnects_;
}

std::string Metrics::render(const EngineStats& e, const EmbeddingStats* emb) const {
  std::lock_guard lock(mu_);
  std::string out;
  header(out, "wick_http_requests_total", "counter", "HTTP requests answered, by endpoint and status code.");
  for (const auto& [key, n] : requests_)
    sample(out, "wick_http_requests_total", double(n),
           "endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"");
  header(out, "wick_client_disconnects_total", "counter", "Clients gone before their response ended (cancelled).");
  sample(out, "wick_client_disconnects_total", double(disconnects_));

  struct Row {
    const char* name;
    const char* type;
    const char* help;
    double value;
  };
  const std::array<Row, 23> rows{{
      {"wick_prompt_tokens_total", "counter", "Prompt tokens computed.", double(e.prompt_tokens)},
      {"wick_cached_prompt_tokens_total", "counter", "Prompt tokens reused from the KV cache (prefix reuse).",
       double(e.cached_prompt_tokens)},
      {"wick_generated_tokens_total", "counter", "Tokens generated.", double(e.generated_tokens)},
      {"wick_engine_requests_total", "counter", "Requests the engine admitted.", double(e.requests)},
      {"wick_engine_finished_total", "counter", "Requests that ran to their end.", double(e.finished)},
      {"wick_engine_cancelled_total", "counter", "Requests cancelled (disconnects, shutdown).", double(e.cancelled)},
      {"wick_engine_failed_total", "counter", "Requests that failed with an error.", double(e.failed)},
      {"wick_engine_rejected_total", "counter", "Requests refused because the queue was full.", double(e.rejected)},
      {"wick_engine_steps_total", "counter", "Batched forward steps run.", double(e.steps)},
      {"wick_queue_length", "gauge", "Requests waiting for a slot.", double(e.queued)},
      {"wick_running", "gauge", "Sequences in the running batch.", double(e.running)},
      {"wick_slots", "gauge", "Sequences the running batch holds at most.", double(e.slots)},
      {"wick_batch_size", "gauge", "Sequences in the last step.", double(e.last_step_batch)},
      {"wick_step_tokens", "gauge", "Tokens in the last step's forward.", double(e.last_step_tokens)},
      {"wick_kv_used_positions", "gauge", "KV cache positions held by running sequences.", double(e.kv_used)},
      {"wick_kv_capacity_positions", "gauge", "KV cache positions of the block pool.", double(e.kv_capacity)},
      {"wick_kv_blocks", "gauge", "Blocks of the paged KV cache.", double(e.kv_blocks)},
      {"wick_kv_blocks_used", "gauge", "KV blocks held by running sequences.", double(e.kv_blocks_used)},
      {"wick_kv_blocks_cached", "gauge", "KV blocks in the prefix cache (held or free).", double(e.kv_blocks_cached)},
      {"wick_prefix_cache_query_tokens_total", "counter", "Prompt tokens looked up in the prefix cache.",
       double(e.prefix_query_tokens)},
      {"wick_prefix_cache_hit_tokens_total", "counter", "Prompt tokens found in the prefix cache.",
       double(e.prefix_hit_tokens)},
      {"wick_spec_drafted_tokens_total", "counter", "Tokens drafted by speculative decoding (--spec).",
       double(e.drafted_tokens)},
      {"wick_spec_accepted_tokens_total", "counter", "Drafted tokens the model kept.", double(e.accepted_tokens)},
  }};
  for (const Row& r : rows) {
    header(out, r.name, r.type, r.help);
    sample(out, r.name, r.value);
  }
  if (emb) {
    const std::array<Row, 7> emb_rows{{
        {"wick_embedding_requests_total", "counter", "Embedding requests finished (embedded, cancelled or failed).",
         double(emb->requests)},
        {"wick_embedding_cancelled_total", "counter", "Embedding requests cancelled (disconnects, shutdown).",
         double(emb->cancelled)},
        {"wick_embedding_texts_total", "counter", "Texts embedded.", double(emb->texts)},
        {"wick_embedding_tokens_total", "counter", "Tokens embedded (without padding).", double(emb->tokens)},
        {"wick_embedding_padded_tokens_total", "counter", "Tokens of the embedding forwards, padding included.",
         double(emb->padded_tokens)},
        {"wick_embedding_forwards_total", "counter", "Embedding forward passes run.", double(emb->forwards)},
        {"wick_embedding_active", "gauge", "Embedding requests waiting or running.", double(emb->active)},
    }};
    for (const Row& r : emb_rows) {
      header(out, r.name, r.type, r.help);
      sample(out, r.name, r.value);
    }
  }
  header(out, "wick_time_to_first_token_seconds", "histogram", "From request arrival to its first token.");
  ttft_.write(out, "wick_time_to_first_token_seconds");
  header(out, "wick_inter_token_latency_seconds", "histogram", "Between consecutive tokens of a request.");
  itl_.write(out, "wick_inter_token_latency_seconds");
  return out;
}

}  // namespace wick::serve
