// A fixed pool of native threads for the CPU kernels.
//
// run(n, fn) calls fn(0..n-1) across the pool (the caller's thread takes part) and returns when
// all calls are done. Which thread runs a task is not fixed, so kernels that need a
// reproducible result must make each task's output depend only on its index. Calls from several
// JS threads (worker_threads) are serialised. Size: SWERL_NUM_THREADS, else the core count.
// If tasks throw, the remaining tasks still run and run() rethrows the first exception on the
// caller's thread, so no exception ever escapes a pool thread (which would terminate Node).
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace swerl {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  void run(int numTasks, const std::function<void(int)>& fn);

  /** The process-wide pool (created on first use, never destroyed). */
  static ThreadPool& global();

 private:
  void workerLoop();
  void drain();

  std::vector<std::thread> workers_;
  std::mutex runMutex_;  // one run() at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* fn_ = nullptr;
  int numTasks_ = 0, nextTask_ = 0, finished_ = 0;
  unsigned long generation_ = 0;
  std::exception_ptr error_;  // first exception thrown by a task of the current run
  bool stop_ = false;
};

/**
 * While one is alive on a thread, every pool run started on that thread runs inline, its tasks in
 * order on that thread. Jobs that run side by side (the trainer's sample lanes) use it so that
 * each keeps one core instead of queueing for the shared pool. With `helpWhenAlone`, a thread
 * whose scope is the only one alive (the last lane of a step still running) uses the pool as any
 * caller does, so that the cores the finished lanes left are not idle; meant for long jobs only,
 * since a short job's neighbour is often between two jobs, not done (the pool's help then
 * oversubscribes the cores). Only the outermost scope on a thread counts: an inner one's
 * arguments are ignored. Results are the same either way, since a task's output depends only on
 * its index.
 */
class InlineRuns {
 public:
  explicit InlineRuns(bool on = true, bool helpWhenAlone = false);
  ~InlineRuns();
  InlineRuns(const InlineRuns&) = delete;
  InlineRuns& operator=(const InlineRuns&) = delete;

 private:
  bool previous_;
  bool counted_;  // this scope made its thread inline (the outermost one), so it is counted
};

/** Threads the kernels use: SWERL_NUM_THREADS if set (>= 1), else std::thread::hardware_concurrency(). */
int configuredThreads();

/**
 * Calls fn(i) for i in [0, n) on the global pool, in contiguous ranges (task t gets
 * [n·t/tasks, n·(t+1)/tasks)). tasks = min(threads, n · workPerItem / minWorkPerTask), at least 1,
 * so small jobs stay on the calling thread. Not to be called from inside a pool task.
 */
template <typename Fn>
void parallelFor(size_t n, size_t workPerItem, size_t minWorkPerTask, Fn fn) {
  ThreadPool& pool = ThreadPool::global();
  size_t tasks = n * workPerItem / minWorkPerTask;
  tasks = tasks < 1 ? 1 : tasks;
  tasks = tasks < static_cast<size_t>(pool.size()) ? tasks : static_cast<size_t>(pool.size());
  if (tasks <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  pool.run(static_cast<int>(tasks), [&](int t) {
    const size_t begin = n * t / tasks, end = n * (t + 1) / tasks;
    for (size_t i = begin; i < end; ++i) fn(i);
  });
}

}  // namespace swerl
