// Argument readers shared by the loss bindings on host arrays (loss_binding.cc, which defines
// them) and on device buffers (loss_device_binding.cc): the per-token inputs, the temperature and
// the policy statistics of a result.
#pragma once

#include <napi.h>

#include <cstddef>

#include "train/losses.h"

namespace swerl::napi {

/** info[i] as a Float32Array of n entries, or nullptr when it is null or undefined. */
const float* optionalFloats(const Napi::CallbackInfo& info, size_t i, const char* name, size_t n);

/** The logit scale at info[i] (1 / temperature), 1 when absent. */
float invTemperatureArg(const Napi::CallbackInfo& info, size_t i);

/** The policy loss's statistics (entropy, clipFracLow, clipFracHigh), added to a result object. */
void setPolicyStats(Napi::Object o, const PolicyLossResult& r);

/**
 * Per-token inputs at info[first..first+5] into `in`: oldLogprobs, advantages, mask (required),
 * seqIds, refLogprobs, rolloutLogprobs (null or undefined when absent), each of T entries.
 */
void readPolicyTokens(const Napi::CallbackInfo& info, size_t first, size_t T, PolicyLossInputs& in);

}  // namespace swerl::napi
