// GET /metrics: the server's counters and the engine's gauges in Prometheus' text format
// (version 0.0.4). Thread-safe: the HTTP workers count into it while /metrics reads it.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wick/serve/embedding_engine.h"
#include "wick/serve/engine.h"

namespace wick::serve {

// A cumulative histogram with fixed upper bounds (seconds), as Prometheus clients keep them.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1) {}
  void observe(double x);
  // The _bucket{le=...}, _sum and _count lines under `name`.
  void write(std::string& out, std::string_view name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative); the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  // One answered HTTP request. endpoint is one of the served paths or "other" (the label's
  // values stay few whatever paths clients send).
  void count_request(std::string_view endpoint, int status);
  void observe_time_to_first_token(double seconds);
  void observe_inter_token_latency(double seconds);
  void count_disconnect();  // a client gone before its response ended (its request cancelled)

  // The exposition text, with the engines' state as of `engine` and `embedding` (null: no
  // embedding model, no such lines).
  std::string render(const EngineStats& engine, const EmbeddingStats* embedding = nullptr) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  Histogram ttft_, itl_;
  uint64_t disconnects_ = 0;
};

}  // namespace wick::serve
