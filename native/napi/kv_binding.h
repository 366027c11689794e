// What other bindings need from the KV cache binding.
#pragma once

#include <napi.h>

#include "kv/paged_kv_cache.h"

namespace swerl::napi {

/** The cache behind a NativePagedKvCache instance; INVALID_ARGUMENT for anything else, DISPOSED after dispose(). */
PagedKvCache& unwrapKvCache(Napi::Env env, Napi::Value v);

}  // namespace swerl::napi
