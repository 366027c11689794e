// Tensor copies from a safetensors file through mmap (see safetensors_reader.h).
#include "io/safetensors_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/half.h"
#include "common/thread_pool.h"

namespace swerl {

namespace {

size_t dtypeSize(TensorDtype d) { return d == TensorDtype::F32 ? 4 : 2; }

// The mapping, unmapped (and the file closed) on every exit path.
struct Mapping {
  int fd = -1;
  void* addr = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (addr != MAP_FAILED) munmap(addr, size);
    if (fd >= 0) close(fd);
  }
};

void copyOne(const unsigned char* src, const TensorCopy& c) {
  const size_t n = c.count;
  // Chunks of 64k elements over the pool; unaligned source: memcpy per element type.
  parallelFor((n + 65535) / 65536, 65536, 65536, [&](size_t k) {
    const size_t begin = k * 65536, end = std::min(n, begin + 65536);
    if (c.dtype == TensorDtype::F32) {
      std::memcpy(c.dst + begin, src + begin * 4, (end - begin) * 4);
      return;
    }
    for (size_t i = begin; i < end; ++i) {
      uint16_t h;
      std::memcpy(&h, src + i * 2, 2);
      c.dst[i] = c.dtype == TensorDtype::Bf16 ? bf16ToF32(h) : f16ToF32(h);
    }
  });
}

}  // namespace

void readSafetensors(const std::string& path, const std::vector<TensorCopy>& copies) {
  Mapping m;
  m.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  SWERL_CHECK(m.fd >= 0, IoError, "cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  SWERL_CHECK(fstat(m.fd, &st) == 0, IoError, "cannot stat " + path + ": " + std::strerror(errno));
  const uint64_t fileSize = static_cast<uint64_t>(st.st_size);
  for (const TensorCopy& c : copies)
    SWERL_CHECK(c.fileOffset <= fileSize && c.count <= (fileSize - c.fileOffset) / dtypeSize(c.dtype), CorruptFile,
                path + " is truncated: a tensor runs past the end of the file (" + std::to_string(fileSize) +
                    " bytes); download it again");
  if (copies.empty() || fileSize == 0) return;
  m.size = static_cast<size_t>(fileSize);
  m.addr = mmap(nullptr, m.size, PROT_READ, MAP_PRIVATE, m.fd, 0);
  SWERL_CHECK(m.addr != MAP_FAILED, IoError, "cannot map " + path + ": " + std::strerror(errno));
  madvise(m.addr, m.size, MADV_SEQUENTIAL);
  const auto* base = static_cast<const unsigned char*>(m.addr);
  for (const TensorCopy& c : copies) copyOne(base + c.fileOffset, c);
}

}  // namespace swerl
