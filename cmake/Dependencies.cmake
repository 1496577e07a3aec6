# Finds every third-party library of the design. A missing one stops configuration with the name of
# the Debian package that provides it (tools/install-deps.sh installs them all).

function(stc_require found what package)
  if(NOT ${found})
    message(FATAL_ERROR "streamtensor needs ${what}: install the Debian package '${package}' "
                        "(apt-get install ${package}), or run tools/install-deps.sh")
  endif()
endfunction()

find_package(PkgConfig QUIET)
stc_require(PKG_CONFIG_FOUND "pkg-config" "pkg-config")

pkg_check_modules(SYSTEMC QUIET IMPORTED_TARGET systemc)
stc_require(SYSTEMC_FOUND "SystemC (pkg-config systemc)" "libsystemc-dev")

find_path(GLPK_INCLUDE_DIR glpk.h)
find_library(GLPK_LIBRARY glpk)
if(GLPK_INCLUDE_DIR AND GLPK_LIBRARY)
  set(GLPK_FOUND TRUE)
  add_library(glpk::glpk UNKNOWN IMPORTED)
  set_target_properties(glpk::glpk PROPERTIES IMPORTED_LOCATION "${GLPK_LIBRARY}"
                                              INTERFACE_INCLUDE_DIRECTORIES "${GLPK_INCLUDE_DIR}")
endif()
stc_require(GLPK_FOUND "GLPK" "libglpk-dev")

find_package(yaml-cpp QUIET)
stc_require(yaml-cpp_FOUND "yaml-cpp" "libyaml-cpp-dev")

find_package(TBB QUIET)
stc_require(TBB_FOUND "oneTBB" "libtbb-dev")

find_package(CLI11 QUIET)
stc_require(CLI11_FOUND "CLI11" "libcli11-dev")

find_package(nlohmann_json QUIET)
stc_require(nlohmann_json_FOUND "nlohmann-json" "nlohmann-json3-dev")

# Debian's libonnx-dev is built with ONNX_ML=1 and ONNX_NAMESPACE=onnx (its imported targets carry
# both); Protobuf must be found first because ONNX's targets link protobuf::libprotobuf.
find_package(Protobuf QUIET)
stc_require(Protobuf_FOUND "Protobuf" "libprotobuf-dev")
find_package(ONNX QUIET)
stc_require(ONNX_FOUND "ONNX" "libonnx-dev")

if(STC_BUILD_TESTS)
  find_package(GTest QUIET)
  stc_require(GTest_FOUND "GoogleTest" "libgtest-dev")
endif()
if(STC_BUILD_BENCH)
  find_package(benchmark QUIET)
  stc_require(benchmark_FOUND "Google Benchmark" "libbenchmark-dev")
endif()

# The report's browser tests decode Chromium's screenshots.
if(STC_BUILD_TESTS)
  find_package(PNG QUIET)
  stc_require(PNG_FOUND "libpng" "libpng-dev")
endif()
