// swerl_launch: the first process of every command a LocalSandbox runs (src/env/sandbox.ts), built
// as build/cmake/Release/swerl_launch. In one exec it does what `prlimit` → `setpriv` → `sh -c
// 'exec 2>&1'` → a bash loop closing inherited descriptors did in four: it sets the resource
// limits, drops to the sandbox's uid (no supplementary groups), joins stderr to stdout, closes
// every descriptor above 2, then execs the rest of its command line (bwrap, or bash directly).
// Each exec of a dynamically linked binary costs a fork, a new address space and a run of the
// dynamic loader; on a virtual machine where page-table updates trap to the hypervisor that was
// tens of milliseconds each, and an agent runs hundreds of commands per DAPO iteration.
//
// Usage: swerl_launch [--data=B] [--as=B] [--nproc=N] [--fsize=B] [--uid=U] [--join-stderr]
//                     -- program [args...]
// Limits set both the soft and the hard value (as `prlimit --x=N` does), and are set before the
// uid changes (the hard limits can then not be raised again). Exit status 127 with a message on
// stderr when an argument is malformed or a step fails: nothing runs then.
#include <grp.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

[[noreturn]] void fail(const char* what, const char* detail) {
  std::fprintf(stderr, "swerl_launch: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  std::exit(127);
}

// Parses a decimal unsigned value; fails on anything else (no sign, no suffix, no overflow).
unsigned long long parse_count(const char* text, const char* flag) {
  if (*text < '0' || *text > '9') fail("not a number", flag);
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0') fail("not a number", flag);
  return v;
}

void set_limit(int resource, unsigned long long value, const char* flag) {
  struct rlimit lim;
  lim.rlim_cur = static_cast<rlim_t>(value);
  lim.rlim_max = static_cast<rlim_t>(value);
  if (setrlimit(resource, &lim) != 0) fail(flag, std::strerror(errno));
}

// Closes every descriptor above 2: close_range where the kernel has it (5.9+), else one by one up
// to the descriptor limit.
void close_inherited() {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0) return;
#endif
  long max = sysconf(_SC_OPEN_MAX);
  if (max < 0 || max > 1 << 20) max = 1 << 20;
  for (long fd = 3; fd < max; ++fd) close(static_cast<int>(fd));
}

// Matches "--name=" at the start of arg; returns the value after '=' or nullptr.
const char* value_of(const char* arg, const char* name) {
  size_t n = std::strlen(name);
  return std::strncmp(arg, name, n) == 0 ? arg + n : nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  long long uid = -1;
  bool join_stderr = false;
  int i = 1;
  for (; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = nullptr;
    if (std::strcmp(a, "--") == 0) {
      ++i;
      break;
    } else if ((v = value_of(a, "--data="))) {
      set_limit(RLIMIT_DATA, parse_count(v, a), a);
    } else if ((v = value_of(a, "--as="))) {
      set_limit(RLIMIT_AS, parse_count(v, a), a);
    } else if ((v = value_of(a, "--nproc="))) {
      set_limit(RLIMIT_NPROC, parse_count(v, a), a);
    } else if ((v = value_of(a, "--fsize="))) {
      set_limit(RLIMIT_FSIZE, parse_count(v, a), a);
    } else if ((v = value_of(a, "--uid="))) {
      unsigned long long u = parse_count(v, a);
      if (u == 0 || u >= 0xffffffffull) fail("the uid must be an unprivileged one", a);
      uid = static_cast<long long>(u);
    } else if (std::strcmp(a, "--join-stderr") == 0) {
      join_stderr = true;
    } else {
      fail("unknown argument", a);
    }
  }
  if (i >= argc) fail("no program to run after --", nullptr);
  if (uid >= 0) {
    // Groups first (needs the privilege the uid change drops), then the gid, then the uid.
    auto id = static_cast<uid_t>(uid);
    if (setgroups(0, nullptr) != 0) fail("setgroups", std::strerror(errno));
    if (setresgid(id, id, id) != 0) fail("setresgid", std::strerror(errno));
    if (setresuid(id, id, id) != 0) fail("setresuid", std::strerror(errno));
  }
  if (join_stderr && dup2(1, 2) != 2) fail("dup2", std::strerror(errno));
  close_inherited();
  execvp(argv[i], argv + i);
  fail(argv[i], std::strerror(errno));
}
