// Stress checks of the kernel thread pool (native/common/thread_pool.cc), built as
// build/cmake/selftest/swerl_pool_selftest and run by test/native/thread-pool.test.ts: every task
// of every run runs exactly once, in back-to-back runs and after the workers have gone to sleep,
// with tasks short and long; exceptions reach the caller after the other tasks ran; concurrent
// callers are serialised; a run of 70000 tasks; pools are torn down busy or idle; every worker
// wakes for a run (a run whose tasks wait for one another completes). A hang (a lost wake-up) is
// caught by the test's timeout. Exit status 0 when all pass; each failure is printed.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_pool.h"

using swerl::ThreadPool;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  }
}

// One run of n tasks: true when each index ran exactly once.
bool runOnce(ThreadPool& pool, int n, std::chrono::microseconds taskTime = {}) {
  std::vector<std::atomic<int>> hits(n);
  pool.run(n, [&](int t) {
    if (taskTime.count() > 0) std::this_thread::sleep_for(taskTime);
    hits[t].fetch_add(1);
  });
  for (int t = 0; t < n; ++t)
    if (hits[t].load() != 1) return false;
  return true;
}

void backToBack(int threads) {
  ThreadPool pool(threads);
  bool ok = true;
  for (int r = 0; r < 20000 && ok; ++r) ok = runOnce(pool, 2 + r % (2 * threads));
  check(ok, "back-to-back runs, threads " + std::to_string(threads));
}

void afterSleeping(int threads) {
  ThreadPool pool(threads);
  bool ok = true;
  for (int r = 0; r < 40 && ok; ++r) {
    // Pauses of several lengths with the workers asleep, then a burst of runs.
    std::this_thread::sleep_for(std::chrono::milliseconds(r % 3 == 0 ? 3 : 0) + std::chrono::microseconds(50 * r));
    for (int b = 0; b < 5 && ok; ++b) ok = runOnce(pool, threads);
  }
  check(ok, "runs after the workers sleep, threads " + std::to_string(threads));
}

// A run of one task per thread whose tasks wait for one another: it completes only when every
// worker wakes and takes part (the caller alone would wait forever; each task gives up after 5 s).
bool allThreadsJoin(ThreadPool& pool, int threads) {
  std::atomic<int> arrived{0};
  std::atomic<bool> ok{true};
  pool.run(threads, [&](int) {
    arrived.fetch_add(1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (arrived.load() < threads)
      if (std::chrono::steady_clock::now() > until) {
        ok = false;
        return;
      }
  });
  return ok.load();
}

void everyWorkerWakes(int threads) {
  ThreadPool pool(threads);
  bool ok = true;
  for (int r = 0; r < 30 && ok; ++r) {
    // After a pause the workers sleep; after none they may still be finishing the last run.
    if (r % 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ok = allThreadsJoin(pool, threads);
  }
  check(ok, "every worker wakes for a run, threads " + std::to_string(threads));
}

void slowTasks(int threads) {
  ThreadPool pool(threads);
  bool ok = true;
  // Tasks of 0.3 and 2 ms: the caller waits for the last one to finish.
  for (int r = 0; r < 20 && ok; ++r) ok = runOnce(pool, threads + r % 3, std::chrono::microseconds(r % 2 ? 2000 : 300));
  check(ok, "tasks of 0.3 and 2 ms, threads " + std::to_string(threads));
}

void exceptions(int threads) {
  ThreadPool pool(threads);
  for (int r = 0; r < 200; ++r) {
    const int n = 2 + r % 5;
    std::vector<std::atomic<int>> hits(n);
    bool caught = false;
    try {
      pool.run(n, [&](int t) {
        hits[t].fetch_add(1);
        if (t == r % n || t == 0) throw std::runtime_error("task " + std::to_string(t));
      });
    } catch (const std::runtime_error&) {
      caught = true;
    }
    bool all = true;
    for (int t = 0; t < n; ++t) all = all && hits[t].load() == 1;
    if (!caught || !all) {
      check(false, "a throwing task: the run rethrows and every other task still runs");
      return;
    }
  }
  check(runOnce(pool, threads), "the pool works after exceptions");
}

void concurrentCallers(int threads) {
  ThreadPool pool(threads);
  std::atomic<bool> ok{true};
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c)
    callers.emplace_back([&, c] {
      for (int r = 0; r < 3000; ++r)
        if (!runOnce(pool, 2 + (r + c) % 4)) ok = false;
    });
  for (auto& t : callers) t.join();
  check(ok.load(), "three callers at once, threads " + std::to_string(threads));
}

void manyTasks() {
  ThreadPool pool(3);
  check(runOnce(pool, 70000), "a run of 70000 tasks");
  check(runOnce(pool, 65535), "a run of 65535 tasks");
}

// Pools destroyed right after a run or while idle: a hang or a crash here is the failure.
void teardown() {
  bool ok = true;
  for (int r = 0; r < 200; ++r) {
    ThreadPool pool(2 + r % 3);
    if (r % 2) ok = runOnce(pool, 3) && ok;                                       // torn down right after a run
    if (r % 4 == 1) std::this_thread::sleep_for(std::chrono::microseconds(300));  // or idle
  }
  check(ok, "runs of pools torn down right after them");
}

}  // namespace

int main() {
  for (int threads : {2, 3, 5}) {
    backToBack(threads);
    afterSleeping(threads);
    everyWorkerWakes(threads);
    slowTasks(threads);
    exceptions(threads);
    concurrentCallers(threads);
  }
  manyTasks();
  teardown();
  if (failures == 0) std::printf("thread pool: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
