// The embedding engine behind `wick serve`'s /v1/embeddings: requests' texts are embedded by
// one thread that owns the sentence-embedding model, batched across requests (a forward pass
// holds the texts of several requests), and each forward is bounded in padded tokens so that
// a cancel takes effect within one short forward. The waiting requests take turns leading a
// forward (its first text is theirs), so a small request waits for one forward at most
// behind a large one, however large.
//
// Threading: submit() and stats() may be called from any thread, and an EmbeddingJob's
// methods from any thread while the engine exists.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "wick/models/sentence_embedder.h"

namespace wick::serve {

struct EmbeddingOptions {
  // Padded tokens (rows x the longest row) in one forward: bounds the time of a step, and so
  // how late a cancel or a new request is seen. At least one text runs per forward however long.
  size_t batch_tokens = 2048;
  size_t max_rows = 256;              // texts in one forward at most
  size_t max_request_tokens = 65536;  // one request's tokens (over every input) at most
  size_t max_queue = 64;              // requests waiting or running at most (beyond: submit refuses)
};

struct EmbeddingStats {
  uint64_t requests = 0;       // finished (embedded, cancelled or failed)
  uint64_t cancelled = 0;      // of those, cancelled
  uint64_t texts = 0;          // texts embedded
  uint64_t tokens = 0;         // real tokens embedded
  uint64_t padded_tokens = 0;  // tokens of the forward passes, padding included
  uint64_t forwards = 0;
  size_t active = 0;  // requests waiting or running now
};

// One request's texts, as the model's token ids, and what became of them.
class EmbeddingJob {
 public:
  // True once the job is finished (embedded, cancelled or failed); waits up to `timeout`.
  bool wait_for(std::chrono::milliseconds timeout);
  // The (texts, hidden) f32 unit-length embeddings on the CPU, in input order, once finished.
  // Rethrows the forward's error; a cancelled job's is an InvalidArgument error.
  Tensor result();
  // Stops the job: its texts not yet embedded are dropped, at the next step at the latest.
  void cancel();
  bool cancelled() const;
  int64_t tokens() const { return tokens_; }

 private:
  friend class EmbeddingEngine;
  std::vector<std::vector<int32_t>> rows_;
  std::vector<size_t> pending_;  // rows not yet taken into a forward, longest first
  size_t embedded_ = 0;
  int64_t tokens_ = 0;
  Tensor out_;
  std::exception_ptr error_;
  bool cancelled_ = false, finished_ = false;  // guarded by the engine's mutex
  std::mutex* mu_ = nullptr;
  std::condition_variable done_cv_;
  std::condition_variable* wake_ = nullptr;  // the engine's, told of a cancel
};

class EmbeddingEngine {
 public:
  // The model must outlive the engine.
  EmbeddingEngine(const models::SentenceEmbedder& model, EmbeddingOptions options);
  ~EmbeddingEngine();  // cancels what is left and joins the thread
  EmbeddingEngine(const EmbeddingEngine&) = delete;
  EmbeddingEngine& operator=(const EmbeddingEngine&) = delete;

  // Queues the token ids of one request's texts (SentenceEmbedder::token_ids). Returns null
  // when max_queue requests are already in; throws InvalidArgument past max_request_tokens.
  std::shared_ptr<EmbeddingJob> submit(std::vector<std::vector<int32_t>> rows);
  EmbeddingStats stats() const;
  const EmbeddingOptions& options() const { return opt_; }
  const models::SentenceEmbedder& model() const { return model_; }

 private:
  struct Row {
    EmbeddingJob* job;
    size_t index;  // in the job's rows_
  };
  void loop();
  std::vector<Row> next_batch();   // under mu_: takes the rows of the next forward
  void finish(EmbeddingJob& job);  // under mu_

  const models::SentenceEmbedder& model_;
  EmbeddingOptions opt_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<EmbeddingJob>> jobs_;  // waiting or running, in turn order
  EmbeddingStats stats_;                            // active is jobs_.size(), filled in by stats()
  bool quit_ = false;
  std::thread thread_;
};

}  // namespace wick::serve
