// What other bindings share with the loss bindings.
#pragma once

#include <napi.h>

#include "train/losses.h"

namespace swerl::napi {

/** A PolicyLossConfig from the object src/train/losses.ts builds (every field present). */
PolicyLossConfig parsePolicyLossConfig(Napi::Object c);

}  // namespace swerl::napi
