# Source selection and per-file ISA flags. Files are found by glob so a new
# kernel or op is a new file, never an edit here.
#
# Naming rules:
#   src/backend/<name>/...   compiled only when that backend is on
#                            (default is always on)
#   *_avx2.c                 x86-64 only, compiled with -mavx2 -mfma -mf16c
#   *_avx512.c               x86-64 only, AVX-512 F/BW/DQ/VL + FMA + F16C
#   *_avx512vnni.c           as above plus VNNI
#   *_neon.c                 aarch64 only

set(TOPOS_FEATURE_DEFINES "")
set(TOPOS_EXTRA_LIBS "")
set(TOPOS_PC_LIBS_LIST "-lpthread" "-lm" "-ldl")

if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
  set(TOPOS_ARCH_X86 ON)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64|ARM64")
  set(TOPOS_ARCH_ARM64 ON)
endif()

foreach(b SIMD BLAS CUDA ACCELERATE METAL)
  if(TOPOS_${b})
    list(APPEND TOPOS_FEATURE_DEFINES TOPOS_HAVE_${b}=1)
  endif()
endforeach()

if(TOPOS_BLAS)
  if(TOPOS_BLAS_VENDOR STREQUAL "openblas")
    find_library(TOPOS_CBLAS_LIB NAMES openblas REQUIRED)
    find_path(TOPOS_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas x86_64-linux-gnu/openblas-pthread aarch64-linux-gnu/openblas-pthread)
  elseif(TOPOS_BLAS_VENDOR STREQUAL "blis")
    find_library(TOPOS_CBLAS_LIB NAMES blis blis64 REQUIRED)
    find_path(TOPOS_CBLAS_INCLUDE cblas.h PATH_SUFFIXES blis)
  elseif(TOPOS_BLAS_VENDOR STREQUAL "mkl")
    find_library(TOPOS_CBLAS_LIB NAMES mkl_rt REQUIRED)
    find_path(TOPOS_CBLAS_INCLUDE mkl_cblas.h cblas.h PATH_SUFFIXES mkl)
  else()
    message(FATAL_ERROR "TOPOS_BLAS_VENDOR must be openblas, blis or mkl")
  endif()
  list(APPEND TOPOS_EXTRA_LIBS ${TOPOS_CBLAS_LIB})
  list(APPEND TOPOS_PC_LIBS_LIST ${TOPOS_CBLAS_LIB})
  include_directories(${TOPOS_CBLAS_INCLUDE})
  list(APPEND TOPOS_FEATURE_DEFINES TOPOS_BLAS_VENDOR_${TOPOS_BLAS_VENDOR}=1)
endif()

function(topos_filter_backend_sources var)
  set(out "")
  foreach(f ${${var}})
    set(keep ON)
    foreach(b simd blas cuda accelerate metal)
      string(TOUPPER ${b} B)
      if(f MATCHES "/backend/${b}/" AND NOT TOPOS_${B})
        set(keep OFF)
      endif()
    endforeach()
    if(f MATCHES "_(avx2|avx512|avx512vnni)\\.c$" AND NOT TOPOS_ARCH_X86)
      set(keep OFF)
    endif()
    if(f MATCHES "_neon\\.c$" AND NOT TOPOS_ARCH_ARM64)
      set(keep OFF)
    endif()
    if(keep)
      list(APPEND out ${f})
    endif()
  endforeach()
  set(${var} ${out} PARENT_SCOPE)
endfunction()

function(topos_collect_sources var)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/*.c)
  topos_filter_backend_sources(srcs)
  set(${var} ${srcs} PARENT_SCOPE)
endfunction()

function(topos_apply_isa_flags files)
  foreach(f ${files})
    if(f MATCHES "_avx512vnni\\.c$")
      set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS
        "-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mavx512vnni;-mfma;-mf16c;-mavx2")
    elseif(f MATCHES "_avx512\\.c$")
      set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS
        "-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mfma;-mf16c;-mavx2")
    elseif(f MATCHES "_avx2\\.c$")
      set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
    endif()
    # The fuzz targets parse files and build models; no fuzz input reaches
    # the compute kernels (the quantized products, the GEMM microkernels,
    # the plans' fused patterns, with their ISA files), whose instrumented compile
    # (coverage, ASan and UBSan over inlined, unrolled loops) was most of the
    # fuzz build's time: qk_generic.c alone ~6 minutes. The sanitizer suite
    # checks them.
    if(TOPOS_FUZZ AND f MATCHES "(/quant/qk_[^/]*|/backend/default/gemm_ukernel[^/]*|/engine/patterns_[^/]*)\\.c$")
      set_property(SOURCE ${f} APPEND PROPERTY COMPILE_OPTIONS "-fno-sanitize=all")
    endif()
    # The sanitizer suite runs at -O1 (five times faster than -O0), these
    # kernels at -O0: clang's UBSan over their unrolled intrinsics at -O1
    # took 15 minutes for qk_avx512vnni.c alone, at -O0 6 seconds.
    if(TOPOS_SANITIZE AND f MATCHES "/quant/qk_(generic|avx512vnni)\\.c$")
      set_property(SOURCE ${f} APPEND PROPERTY COMPILE_OPTIONS "-O0")
    endif()
  endforeach()
endfunction()
