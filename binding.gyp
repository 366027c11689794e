# CPU-only build of the same addon with node-gyp, for machines without CMake
# (scripts/build-native.mjs picks it when cmake is missing; output: build/Release/swerl.node).
# Sources come from native/sources.json, like CMakeLists.txt. -Wno-init-self on the AVX-512 files:
# see CMakeLists.txt (GCC 12's intrinsics headers self-initialise; GCC bug 105593).
{
  "variables": {
    "swerl_version": "<!(node -p \"require('./package.json').version\")"
  },
  "target_defaults": {
    "cflags_cc": ["-std=c++17", "-O3", "-fexceptions"],
    "cflags_cc!": ["-fno-exceptions", "-std=gnu++17", "-std=gnu++20"],
    "cflags!": ["-fno-exceptions"],
    "include_dirs": ["native", "<!(node -p \"require('node-addon-api').include_dir\")"],
    "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED", "SWERL_VERSION=\"<(swerl_version)\""],
    "xcode_settings": { "GCC_ENABLE_CPP_EXCEPTIONS": "YES", "CLANG_CXX_LANGUAGE_STANDARD": "c++17" }
  },
  "targets": [
    {
      "target_name": "swerl_avx2",
      "type": "static_library",
      "sources": ["<!@(node -p \"require('./native/sources.json').avx2.join(' ')\")"],
      "conditions": [
        ["target_arch=='x64' or target_arch=='ia32'", { "cflags_cc": ["-mavx2", "-mfma", "-mf16c"] }]
      ]
    },
    {
      "target_name": "swerl_avx512",
      "type": "static_library",
      "sources": ["<!@(node -p \"require('./native/sources.json').avx512.join(' ')\")"],
      "conditions": [
        ["target_arch=='x64'", { "cflags_cc": ["-mavx512f", "-Wno-init-self"] }]
      ]
    },
    {
      "target_name": "swerl",
      "dependencies": ["swerl_avx2", "swerl_avx512"],
      "libraries": ["-ldl"],
      "sources": [
        "<!@(node -p \"require('./native/sources.json').cpu.join(' ')\")",
        "<!@(node -p \"require('./native/sources.json').noCuda.join(' ')\")"
      ]
    }
  ]
}
