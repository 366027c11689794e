// Implementation of the kernel thread pool (see thread_pool.h).
#include "common/thread_pool.h"

#include <atomic>
#include <cstdlib>

namespace swerl {

namespace {
thread_local bool tInline = false;
thread_local bool tTakesHelp = false;  // this inline thread uses the pool while it is alone
// Threads inside an InlineRuns scope now (each counted once, at its outermost scope).
std::atomic<int> gInlineThreads{0};
}  // namespace

InlineRuns::InlineRuns(bool on, bool helpWhenAlone) : previous_(tInline), counted_(on && !tInline) {
  tInline = tInline || on;
  if (counted_) {
    gInlineThreads.fetch_add(1);
    tTakesHelp = helpWhenAlone;  // read only while tInline, so only the counted scope sets it
  }
}
InlineRuns::~InlineRuns() {
  if (counted_) {
    gInlineThreads.fetch_sub(1);
    tTakesHelp = false;
  }
  tInline = previous_;
}

int configuredThreads() {
  if (const char* env = std::getenv("SWERL_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1) return n;
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

ThreadPool& ThreadPool::global() {
  // Leaked on purpose: joining threads from a static destructor during process exit can hang.
  static ThreadPool* pool = new ThreadPool(configuredThreads());
  return *pool;
}

// Takes tasks until none are left; called with mutex_ held, returns with it held.
void ThreadPool::drain() {
  while (nextTask_ < numTasks_) {
    int task = nextTask_++;
    const auto* fn = fn_;
    mutex_.unlock();
    std::exception_ptr err;
    try {
      (*fn)(task);
    } catch (...) {
      err = std::current_exception();
    }
    mutex_.lock();
    if (err && !error_) error_ = err;
    if (++finished_ == numTasks_) done_.notify_all();
  }
}

void ThreadPool::workerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  // Runs start at generation 1: a worker that starts after the first run was published (the pool
  // is used as soon as it is made) still takes part in it.
  unsigned long seen = 0;
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    drain();
  }
}

void ThreadPool::run(int numTasks, const std::function<void(int)>& fn) {
  if (numTasks <= 0) return;
  // An inline thread keeps to itself while another runs beside it (both would queue for the
  // pool); alone (its neighbours done), a long job takes the pool's help. The same tasks run.
  if (workers_.empty() || numTasks == 1 || (tInline && (!tTakesHelp || gInlineThreads.load() > 1))) {
    std::exception_ptr first;
    for (int i = 0; i < numTasks; ++i) {
      try {
        fn(i);
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
    return;
  }
  std::lock_guard<std::mutex> serial(runMutex_);
  std::unique_lock<std::mutex> lock(mutex_);
  fn_ = &fn;
  numTasks_ = numTasks;
  nextTask_ = 0;
  finished_ = 0;
  ++generation_;
  wake_.notify_all();
  drain();
  done_.wait(lock, [&] { return finished_ == numTasks_; });
  fn_ = nullptr;
  numTasks_ = 0;
  std::exception_ptr err = error_;
  error_ = nullptr;
  lock.unlock();
  if (err) std::rethrow_exception(err);
}

}  // namespace swerl
