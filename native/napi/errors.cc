// Building SwerlError objects from native exceptions (see errors.h).
#include "napi/errors.h"

#include <new>

#include "common/error.h"
#include "napi/addon_data.h"

namespace swerl::napi {

Napi::Error swerlError(Napi::Env env, const char* code, const std::string& message) {
  AddonData& data = addonData(env);
  if (data.swerlError.IsEmpty()) {  // init() not called yet: a plain Error that still has the code
    Napi::Error err = Napi::Error::New(env, message);
    err.Set("code", Napi::String::New(env, code));
    return err;
  }
  Napi::Object obj = data.swerlError.New({Napi::String::New(env, message), Napi::String::New(env, code)});
  return Napi::Error(env, obj);
}

void require(Napi::Env env, bool cond, const std::string& message) {
  if (!cond) throw swerlError(env, "INVALID_ARGUMENT", message);
}

void describeCurrentException(std::string& code, std::string& message) {
  try {
    throw;
  } catch (const Error& e) {
    code = errorCodeName(e.code());
    message = e.what();
  } catch (const std::bad_alloc&) {
    code = "OUT_OF_MEMORY";
    message = "out of host memory";
  } catch (const std::exception& e) {
    code = "INTERNAL";
    message = std::string("unexpected native error: ") + e.what();
  } catch (...) {
    code = "INTERNAL";
    message = "unexpected native error";
  }
}

void rethrowAsSwerlError(Napi::Env env) {
  std::string code, message;
  describeCurrentException(code, message);
  throw swerlError(env, code.c_str(), message);
}

}  // namespace swerl::napi
