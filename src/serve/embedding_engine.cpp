#include "wick/serve/embedding_engine.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "wick/ops.h"

namespace wick::serve {

bool EmbeddingJob::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock lk(*mu_);
  return done_cv_.wait_for(lk, timeout, [&] { return finished_; });
}

Tensor EmbeddingJob::result() {
  std::lock_guard lk(*mu_);
  WICK_CHECK(finished_, InvalidArgument, "embedding: the request has not finished");
  if (error_) std::rethrow_exception(error_);
  WICK_CHECK(!cancelled_, InvalidArgument, "embedding: the request was cancelled");
  return out_;
}

void EmbeddingJob::cancel() {
  std::lock_guard lk(*mu_);
  if (finished_) return;
  cancelled_ = true;
  wake_->notify_all();
}

bool EmbeddingJob::cancelled() const {
  std::lock_guard lk(*mu_);
  return cancelled_;
}

EmbeddingEngine::EmbeddingEngine(const models::SentenceEmbedder& model, EmbeddingOptions options)
    : model_(model), opt_(options) {
  WICK_CHECK(opt_.batch_tokens >= 1 && opt_.max_rows >= 1 && opt_.max_request_tokens >= 1, InvalidArgument,
             "embedding: batch_tokens, max_rows and max_request_tokens must be at least 1");
  thread_ = std::thread([this] { loop(); });
}

EmbeddingEngine::~EmbeddingEngine() {
  {
    std::lock_guard lk(mu_);
    quit_ = true;
    for (auto& job : jobs_) {
      job->cancelled_ = true;
      finish(*job);
    }
  }
  wake_.notify_all();
  thread_.join();  // a forward in flight reads its jobs' rows: they are released after it
  jobs_.clear();
}

std::shared_ptr<EmbeddingJob> EmbeddingEngine::submit(std::vector<std::vector<int32_t>> rows) {
  auto job = std::make_shared<EmbeddingJob>();
  size_t tokens = 0;
  for (const auto& row : rows) {
    WICK_CHECK(!row.empty(), InvalidArgument, "embedding: an empty token row");
    tokens += row.size();
  }
  WICK_CHECK(tokens <= opt_.max_request_tokens, InvalidArgument, "embedding: the request has ", tokens,
             " tokens, over the limit of ", opt_.max_request_tokens, " per request");
  job->tokens_ = int64_t(tokens);
  job->pending_.resize(rows.size());
  std::iota(job->pending_.begin(), job->pending_.end(), 0);
  std::stable_sort(job->pending_.begin(), job->pending_.end(),
                   [&](size_t a, size_t b) { return rows[a].size() > rows[b].size(); });
  job->out_ = Tensor::empty({int64_t(rows.size()), model_.model().config().hidden_size}, DType::F32);
  job->rows_ = std::move(rows);
  job->mu_ = &mu_;
  job->wake_ = &wake_;
  {
    std::lock_guard lk(mu_);
    if (quit_ || jobs_.size() >= opt_.max_queue) return nullptr;
    if (job->rows_.empty()) {
      finish(*job);  // nothing to embed: done at once
      return job;
    }
    jobs_.push_back(job);
  }
  wake_.notify_all();
  return job;
}

EmbeddingStats EmbeddingEngine::stats() const {
  std::lock_guard lk(mu_);
  EmbeddingStats s = stats_;
  s.active = jobs_.size();
  return s;
}

void EmbeddingEngine::finish(EmbeddingJob& job) {
  if (job.finished_) return;
  job.finished_ = true;
  ++stats_.requests;
  if (job.cancelled_ && !job.error_) ++stats_.cancelled;
  job.done_cv_.notify_all();
}

// The rows of the next forward. The request at the front of the turn order leads: its next
// text (its longest left) goes first. The other texts on offer (a bounded number from each
// request, longest first) join in order of how close their length is to the leader's, as
// long as the forward's padded tokens stay within the budget: rows of one length pad least.
std::vector<EmbeddingEngine::Row> EmbeddingEngine::next_batch() {
  // Cancelled requests leave first (their rows in flight, if any, were already accounted).
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if ((*it)->cancelled_) {
      finish(**it);
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  }
  // The next request with texts left leads; it goes to the back of the turn order.
  size_t turns = 0;
  while (turns < jobs_.size() && jobs_.front()->pending_.empty()) {
    jobs_.push_back(jobs_.front());
    jobs_.pop_front();
    ++turns;
  }
  std::vector<Row> batch;
  if (turns == jobs_.size()) return batch;  // every request's texts are in flight
  EmbeddingJob* leader = jobs_.front().get();
  jobs_.push_back(jobs_.front());
  jobs_.pop_front();
  const auto length = [](const Row& r) { return r.job->rows_[r.index].size(); };
  batch.push_back({leader, leader->pending_.front()});
  const size_t lead = length(batch.front());
  std::vector<Row> offered;
  for (const auto& job : jobs_) {
    const size_t skip = job.get() == leader ? 1 : 0;
    for (size_t i = skip; i < std::min(job->pending_.size(), skip + opt_.max_rows); ++i)
      offered.push_back({job.get(), job->pending_[i]});
  }
  std::stable_sort(offered.begin(), offered.end(), [&](const Row& a, const Row& b) {
    const size_t la = length(a), lb = length(b);
    const size_t da = la > lead ? la - lead : lead - la, db = lb > lead ? lb - lead : lead - lb;
    return da != db ? da < db : la > lb;
  });
  size_t longest = lead;
  for (const Row& r : offered) {
    if (batch.size() >= opt_.max_rows) break;
    const size_t padded = (batch.size() + 1) * std::max(longest, length(r));
    if (padded > opt_.batch_tokens) continue;
    batch.push_back(r);
    longest = std::max(longest, length(r));
  }
  // Taken rows leave their requests' pending lists (each list keeps its order); they were
  // all among the first max_rows + 1 of their list.
  std::vector<size_t> taken;
  for (const auto& job : jobs_) {
    taken.clear();
    for (const Row& r : batch)
      if (r.job == job.get()) taken.push_back(r.index);
    if (taken.empty()) continue;
    auto& p = job->pending_;
    const auto head_end = p.begin() + long(std::min(p.size(), opt_.max_rows + 1));
    const auto kept_end = std::remove_if(
        p.begin(), head_end, [&](size_t index) { return std::find(taken.begin(), taken.end(), index) != taken.end(); });
    p.erase(kept_end, head_end);
  }
  return batch;
}

void EmbeddingEngine::loop() {
  std::vector<const std::vector<int32_t>*> row_ptrs;
  for (;;) {
    std::vector<Row> rows;
    {
      std::unique_lock lk(mu_);
      wake_.wait(lk, [&] {
        if (quit_) return true;
        for (const auto& job : jobs_)
          if (job->cancelled_ || !job->pending_.empty()) return true;
        return false;
      });
      if (quit_) return;
      rows = next_batch();
      if (rows.empty()) continue;
    }
    // The forward runs outside the lock: requests come, and are cancelled, meanwhile. The
    // jobs of `rows` stay alive: only this thread removes jobs, and not before their rows
    // are back.
    row_ptrs.clear();
    size_t tokens = 0;
    for (const Row& r : rows) {
      row_ptrs.push_back(&r.job->rows_[r.index]);
      tokens += r.job->rows_[r.index].size();
    }
    Tensor emb;
    std::exception_ptr error;
    try {
      emb = model_.embed_rows(row_ptrs);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lk(mu_);
    ++stats_.forwards;
    stats_.padded_tokens += rows.size() * row_ptrs.front()->size();
    const size_t hidden = error ? 0 : size_t(emb.dim(1));
    const auto* src = error ? nullptr : static_cast<const float*>(emb.data());
    for (size_t i = 0; i < rows.size(); ++i) {
      EmbeddingJob& job = *rows[i].job;
      ++job.embedded_;
      if (error) {
        if (!job.error_) job.error_ = error;
        continue;
      }
      std::memcpy(static_cast<float*>(job.out_.mutable_data()) + rows[i].index * hidden, src + i * hidden,
                  hidden * sizeof(float));
      ++stats_.texts;
    }
    if (!error) stats_.tokens += tokens;
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      EmbeddingJob& job = **it;
      if (job.error_ || job.embedded_ == job.rows_.size()) {
        finish(job);
        it = jobs_.erase(it);
      } else {
        ++it;
      }
    }
  }
}

}  // namespace wick::serve
