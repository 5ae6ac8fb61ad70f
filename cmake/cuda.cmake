# CUDA backend: with RLPT_CUDA=AUTO it is built whenever nvcc is found, even on a
# machine without a GPU (the GPU tests then skip). ON fails when anything is missing.
# The default architecture: 90 (Hopper: sm_90 code plus compute_90 PTX, which the
# driver compiles for newer GPUs) when the toolkit knows it, else the newest one the
# toolkit lists, so an older or newer toolkit still configures. Pass
# -DCMAKE_CUDA_ARCHITECTURES=80 (A100) and the like to choose.
function(rlpt_default_cuda_arch out)
  execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --list-gpu-arch
    OUTPUT_VARIABLE archs ERROR_QUIET RESULT_VARIABLE rc)
  string(REGEX MATCHALL "compute_[0-9]+" archs "${archs}")
  string(REPLACE "compute_" "" archs "${archs}")
  set(pick 90)
  if(rc EQUAL 0 AND archs AND NOT "90" IN_LIST archs)
    list(SORT archs COMPARE NATURAL)
    list(GET archs -1 pick)
    message(STATUS "rlpt: this CUDA toolkit has no sm_90; building for ${pick}")
  endif()
  set(${out} ${pick} PARENT_SCOPE)
endfunction()

set(RLPT_HAVE_CUDA OFF)
set(RLPT_CUDA_SOURCES "")
set(RLPT_CUDA_LIBRARIES "")
if(NOT RLPT_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER AND NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    rlpt_default_cuda_arch(rlpt_arch)
    set(CMAKE_CUDA_ARCHITECTURES ${rlpt_arch} CACHE STRING
      "CUDA architectures (Hopper by default, else the newest the toolkit has)")
  endif()
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS $ENV{NCCL_HOME} ${NCCL_HOME}
      ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
    find_library(NCCL_LIBRARY nccl HINTS $ENV{NCCL_HOME} ${NCCL_HOME}
      ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
    if(NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
      if(RLPT_CUDA STREQUAL "ON")
        message(FATAL_ERROR "RLPT_CUDA=ON but NCCL was not found: set NCCL_HOME to the "
          "directory holding include/nccl.h and lib/libnccl.so")
      endif()
      message(STATUS "rlpt: NCCL not found, building without CUDA (set NCCL_HOME)")
    else()
      set(RLPT_HAVE_CUDA ON)
      file(GLOB RLPT_CUDA_SOURCES CONFIGURE_DEPENDS
        ${CMAKE_SOURCE_DIR}/kernels/*.cu ${CMAKE_SOURCE_DIR}/kernels/*.c)
      set(RLPT_CUDA_LIBRARIES CUDA::cudart CUDA::cublasLt ${NCCL_LIBRARY})
      include_directories(${NCCL_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
      set(CMAKE_CUDA_STANDARD 17)
      # Warnings of device code and of the host compiler (nvcc passes -Xcompiler on).
      add_compile_options("$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>")
      if(RLPT_WERROR)
        add_compile_options("$<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>")
      endif()
      message(STATUS "rlpt: CUDA backend ON (archs ${CMAKE_CUDA_ARCHITECTURES}, NCCL ${NCCL_LIBRARY})")
    endif()
  elseif(RLPT_CUDA STREQUAL "ON")
    message(FATAL_ERROR "RLPT_CUDA=ON but no CUDA compiler (nvcc) was found: put nvcc on PATH "
      "or set CMAKE_CUDA_COMPILER")
  else()
    message(STATUS "rlpt: nvcc not found, building without CUDA")
  endif()
endif()
