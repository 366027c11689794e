// JS binding of the paged KV cache: class NativePagedKvCache, wrapped by src/kv/paged-kv-cache.ts.
//
// Small results (append's newBlocks, stats) are written into a Float64Array the wrapper hands
// over once at construction, so the hot calls create no JS objects.
#include <memory>
#include <string>
#include <vector>

#include "kv/paged_kv_cache.h"
#include "napi/addon_data.h"
#include "napi/args.h"
#include "napi/errors.h"

namespace swerl::napi {

namespace {

constexpr size_t kOutSlots = 8;

KvDtype parseDtype(Napi::Env env, const std::string& s) {
  if (s == "f32") return KvDtype::F32;
  if (s == "f16") return KvDtype::F16;
  if (s == "bf16") return KvDtype::Bf16;
  throw swerlError(env, "INVALID_ARGUMENT", "dtype must be 'f32', 'f16' or 'bf16', got '" + s + "'");
}

Device parseDevice(Napi::Env env, const std::string& s) {
  if (s == "cpu") return Device::Cpu;
  if (s == "cuda") return Device::Cuda;
  throw swerlError(env, "INVALID_ARGUMENT", "device must be 'cpu' or 'cuda', got '" + s + "'");
}

int32_t intOption(Napi::Env env, Napi::Object o, const char* name) {
  Napi::Value v = o.Get(name);
  require(env, v.IsNumber(), std::string(name) + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  require(env, std::isfinite(d) && std::floor(d) == d && d >= -2147483648.0 && d <= 2147483647.0,
          std::string(name) + " must be a 32-bit integer");
  return static_cast<int32_t>(d);
}

}  // namespace

class KvCacheWrap : public Napi::ObjectWrap<KvCacheWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(
        env, "NativePagedKvCache",
        {InstanceMethod<&KvCacheWrap::CreateSequence>("createSequence"), InstanceMethod<&KvCacheWrap::Append>("append"),
         InstanceMethod<&KvCacheWrap::AppendBatch>("appendBatch"),
         InstanceMethod<&KvCacheWrap::CommitBatch>("commitBatch"), InstanceMethod<&KvCacheWrap::Commit>("commit"),
         InstanceMethod<&KvCacheWrap::Fork>("fork"), InstanceMethod<&KvCacheWrap::Free>("free"),
         InstanceMethod<&KvCacheWrap::Length>("length"),
         InstanceMethod<&KvCacheWrap::CommittedLength>("committedLength"),
         InstanceMethod<&KvCacheWrap::BlockTable>("blockTable"),
         InstanceMethod<&KvCacheWrap::SetWeightVersion>("setWeightVersion"),
         InstanceMethod<&KvCacheWrap::Stats>("stats"), InstanceMethod<&KvCacheWrap::SlotMapping>("slotMapping"),
         InstanceMethod<&KvCacheWrap::WriteKv>("writeKv"), InstanceMethod<&KvCacheWrap::ReadKv>("readKv"),
         InstanceMethod<&KvCacheWrap::Dispose>("dispose")});
  }

  // new NativePagedKvCache({numBlocks, blockSize, numLayers, numKvHeads, headDim, dtype, device,
  //                         prefixCaching}, out: Float64Array(8))
  explicit KvCacheWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<KvCacheWrap>(info) {
    Napi::Env env = info.Env();
    guarded(env, [&] {
      require(env, info.Length() >= 2 && info[0].IsObject(), "options must be an object");
      Napi::Object o = info[0].As<Napi::Object>();
      KvCacheOptions opts;
      opts.numBlocks = intOption(env, o, "numBlocks");
      opts.blockSize = intOption(env, o, "blockSize");
      opts.numLayers = intOption(env, o, "numLayers");
      opts.numKvHeads = intOption(env, o, "numKvHeads");
      opts.headDim = intOption(env, o, "headDim");
      require(env, o.Get("dtype").IsString(), "dtype must be a string");
      opts.dtype = parseDtype(env, o.Get("dtype").As<Napi::String>().Utf8Value());
      require(env, o.Get("device").IsString(), "device must be a string");
      opts.device = parseDevice(env, o.Get("device").As<Napi::String>().Utf8Value());
      require(env, o.Get("prefixCaching").IsBoolean(), "prefixCaching must be a boolean");
      opts.prefixCaching = o.Get("prefixCaching").As<Napi::Boolean>().Value();
      Napi::Float64Array out = argFloat64Array(info, 1, "out");
      require(env, out.ElementLength() >= kOutSlots, "out must have 8 elements");
      out_ = Napi::Persistent(out);
      cache_ = std::make_unique<PagedKvCache>(opts);
      // Tell V8 how much host memory this small JS object holds, so that dropped caches are
      // collected promptly.
      if (opts.device == Device::Cpu) {
        const KvGeometry& g = cache_->geometry();
        externalBytes_ = static_cast<int64_t>(2 * g.numLayers * g.slots() * g.rowElems() * dtypeBytes(g.dtype));
        Napi::MemoryManagement::AdjustExternalMemory(env, externalBytes_);
      }
      return 0;
    });
  }

  ~KvCacheWrap() override { release(); }

  PagedKvCache& cacheRef(Napi::Env env) { return cache(env); }

 private:
  double* out() { return out_.Value().Data(); }

  // The cache, or DISPOSED after dispose(). Every method goes through here.
  PagedKvCache& cache(Napi::Env env) {
    if (!cache_) throw swerlError(env, "DISPOSED", "this PagedKvCache was disposed; create a new one");
    return *cache_;
  }

  void release() {
    cache_.reset();
    if (externalBytes_ > 0) Napi::MemoryManagement::AdjustExternalMemory(Env(), -externalBytes_);
    externalBytes_ = 0;
  }

  // dispose(): frees the KV pages now instead of at garbage collection; idempotent.
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    release();
    return info.Env().Undefined();
  }

  Napi::Value CreateSequence(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] {
      return Napi::Number::New(info.Env(), static_cast<double>(cache(info.Env()).createSequence()));
    });
  }

  // append(seq, tokens: Int32Array) -> cachedTokens; out[0] = newBlocks
  Napi::Value Append(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] {
      int64_t seq = argInteger(info, 0, "seq");
      Napi::Int32Array tokens = argInt32Array(info, 1, "tokens");
      AppendResult r = cache(info.Env()).append(seq, tokens.Data(), tokens.ElementLength());
      out()[0] = static_cast<double>(r.newBlocks);
      return Napi::Number::New(info.Env(), static_cast<double>(r.cachedTokens));
    });
  }

  // Sequence ids from a Float64Array (ids are safe integers, not always int32).
  static const std::vector<int64_t>& seqIds(const Napi::CallbackInfo& info, size_t i, std::vector<int64_t>& out) {
    Napi::Float64Array ids = argFloat64Array(info, i, "seqs");
    out.resize(ids.ElementLength());
    for (size_t j = 0; j < out.size(); ++j) {
      double d = ids[j];
      if (!(std::isfinite(d) && std::floor(d) == d && std::fabs(d) <= 9007199254740991.0))
        throw swerlError(info.Env(), "INVALID_ARGUMENT", "seqs[" + std::to_string(j) + "] is not a safe integer");
      out[j] = static_cast<int64_t>(d);
    }
    return out;
  }

  // appendBatch(seqs: Float64Array, tokens: Int32Array, counts: Int32Array, perSeq?: Int32Array)
  // -> total cached tokens; out[0] = newBlocks; perSeq[i] = cached tokens of seqs[i] when given.
  // Nothing is allocated per call: this is the engine's per-step path.
  Napi::Value AppendBatch(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] {
      const std::vector<int64_t>& seqs = seqIds(info, 0, seqScratch_);
      Napi::Int32Array tokens = argInt32Array(info, 1, "tokens"), counts = argInt32Array(info, 2, "counts");
      require(info.Env(), counts.ElementLength() == seqs.size(), "counts must have one entry per sequence");
      int64_t total = 0;
      for (size_t j = 0; j < seqs.size(); ++j) total += counts[j];
      require(info.Env(), total == static_cast<int64_t>(tokens.ElementLength()),
              "the counts must add up to tokens.length");
      int32_t* perSeq = nullptr;
      if (info.Length() > 3 && !info[3].IsUndefined()) {
        Napi::Int32Array out = argInt32Array(info, 3, "perSequence");
        require(info.Env(), out.ElementLength() >= seqs.size(), "perSequence must have one entry per sequence");
        perSeq = out.Data();
      }
      cachedScratch_.resize(seqs.size());
      int64_t newBlocks =
          cache(info.Env()).appendBatch(seqs.data(), seqs.size(), tokens.Data(), counts.Data(), cachedScratch_.data());
      out()[0] = static_cast<double>(newBlocks);
      int64_t cached = 0;
      for (size_t j = 0; j < seqs.size(); ++j) {
        cached += cachedScratch_[j];
        if (perSeq) perSeq[j] = static_cast<int32_t>(cachedScratch_[j]);
      }
      return Napi::Number::New(info.Env(), static_cast<double>(cached));
    });
  }

  // commitBatch(seqs: Float64Array)
  Napi::Value CommitBatch(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] {
      const std::vector<int64_t>& seqs = seqIds(info, 0, seqScratch_);
      cache(info.Env()).commitBatch(seqs.data(), seqs.size());
      return info.Env().Undefined();
    });
  }

  Napi::Value Commit(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] {
      cache(info.Env()).commit(argInteger(info, 0, "seq"));
      return info.Env().Undefined();
    });
  }

  Napi::Value Fork(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] {
      return Napi::Number::New(info.Env(), static_cast<double>(cache(info.Env()).fork(argInteger(info, 0, "seq"))));
    });
  }

  Napi::Value Free(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] {
      cache(info.Env()).free(argInteger(info, 0, "seq"));
      return info.Env().Undefined();
    });
  }

  Napi::Value Length(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] {
      return Napi::Number::New(info.Env(), static_cast<double>(cache(info.Env()).length(argInteger(info, 0, "seq"))));
    });
  }

  Napi::Value CommittedLength(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] {
      return Napi::Number::New(info.Env(),
                               static_cast<double>(cache(info.Env()).committedLength(argInteger(info, 0, "seq"))));
    });
  }

  Napi::Value BlockTable(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] {
      const std::vector<int32_t>& table = cache(info.Env()).blockTable(argInteger(info, 0, "seq"));
      Napi::Int32Array arr = Napi::Int32Array::New(info.Env(), table.size());
      std::copy(table.begin(), table.end(), arr.Data());
      return arr;
    });
  }

  Napi::Value SetWeightVersion(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] {
      cache(info.Env()).setWeightVersion(argInteger(info, 0, "version"));
      return info.Env().Undefined();
    });
  }

  // stats() -> undefined; out[0..6] = numBlocks, freeBlocks, cachedBlocks, activeBlocks,
  // queriedTokens, cachedTokens, evictions
  Napi::Value Stats(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] {
      KvCacheStats s = cache(info.Env()).stats();
      double* o = out();
      o[0] = static_cast<double>(s.numBlocks);
      o[1] = static_cast<double>(s.freeBlocks);
      o[2] = static_cast<double>(s.cachedBlocks);
      o[3] = static_cast<double>(s.activeBlocks);
      o[4] = static_cast<double>(s.queriedTokens);
      o[5] = static_cast<double>(s.cachedTokens);
      o[6] = static_cast<double>(s.evictions);
      return info.Env().Undefined();
    });
  }

  Napi::Value SlotMapping(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] {
      int64_t seq = argInteger(info, 0, "seq"), start = argInteger(info, 1, "start"),
              count = argInteger(info, 2, "count");
      require(info.Env(), count >= 0 && start >= 0 && start + count <= cache(info.Env()).length(seq),
              "positions [start, start + count) must lie inside the sequence");
      Napi::Int32Array arr = Napi::Int32Array::New(info.Env(), static_cast<size_t>(count));
      cache(info.Env()).slotMapping(seq, start, count, arr.Data());
      return arr;
    });
  }

  // writeKv(seq, layer, start, k: Float32Array, v: Float32Array); count = k.length / rowElems
  Napi::Value WriteKv(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] {
      int64_t seq = argInteger(info, 0, "seq"), layer = argInteger(info, 1, "layer"),
              start = argInteger(info, 2, "start");
      Napi::Float32Array k = argFloat32Array(info, 3, "k"), v = argFloat32Array(info, 4, "v");
      const size_t row = cache(info.Env()).geometry().rowElems();
      require(info.Env(), k.ElementLength() == v.ElementLength() && k.ElementLength() % row == 0,
              "k and v must have the same length, a multiple of numKvHeads * headDim = " + std::to_string(row));
      require(info.Env(), layer >= 0 && layer <= INT32_MAX, "layer must be >= 0");
      cache(info.Env())
          .writeKv(seq, static_cast<int32_t>(layer), start, static_cast<int64_t>(k.ElementLength() / row), k.Data(),
                   v.Data());
      return info.Env().Undefined();
    });
  }

  // readKv(seq, layer, start, count) -> [k, v] as Float32Array [count, numKvHeads * headDim]
  Napi::Value ReadKv(const Napi::CallbackInfo& info) {
    return guarded(info.Env(), [&] {
      Napi::Env env = info.Env();
      int64_t seq = argInteger(info, 0, "seq"), layer = argInteger(info, 1, "layer"),
              start = argInteger(info, 2, "start"), count = argInteger(info, 3, "count");
      require(env, layer >= 0 && layer <= INT32_MAX, "layer must be >= 0");
      require(env, count >= 0 && start >= 0 && start + count <= cache(info.Env()).length(seq),
              "positions [start, start + count) must lie inside the sequence");
      const size_t n = static_cast<size_t>(count) * cache(info.Env()).geometry().rowElems();
      Napi::Float32Array k = Napi::Float32Array::New(env, n), v = Napi::Float32Array::New(env, n);
      cache(info.Env()).readKv(seq, static_cast<int32_t>(layer), start, count, k.Data(), v.Data());
      Napi::Array pair = Napi::Array::New(env, 2);
      pair.Set(0u, k);
      pair.Set(1u, v);
      return pair;
    });
  }

  std::unique_ptr<PagedKvCache> cache_;
  Napi::Reference<Napi::Float64Array> out_;
  std::vector<int64_t> seqScratch_, cachedScratch_;
  int64_t externalBytes_ = 0;
};

Napi::Function defineKvCache(Napi::Env env) {
  Napi::Function ctor = KvCacheWrap::Define(env);
  addonData(env).kvCacheClass = Napi::Persistent(ctor);
  return ctor;
}

PagedKvCache& unwrapKvCache(Napi::Env env, Napi::Value v) {
  require(env, v.IsObject() && v.As<Napi::Object>().InstanceOf(addonData(env).kvCacheClass.Value()),
          "kvCache must be a NativePagedKvCache");
  return KvCacheWrap::Unwrap(v.As<Napi::Object>())->cacheRef(env);
}

}  // namespace swerl::napi
