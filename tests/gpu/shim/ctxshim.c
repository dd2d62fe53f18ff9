/*
 * A test-only LD_PRELOAD interposer that mistreats threads without a CUDA context, the way
 * the layers behind vllm#38228 / lmdeploy#1169 (API-remoting frontend: abort) and
 * HAMi-core#187 (garbage device id) do. It wraps cuCtxGetDevice only, and only when
 * NVIDIA's driver answers CUDA_ERROR_INVALID_CONTEXT (201): bound threads are untouched.
 *
 *   cc -shared -fPIC -O2 -o libctxshim.so ctxshim.c -ldl
 *   CTXSHIM_MODE=abort|garbage|hang|error LD_PRELOAD=$PWD/libctxshim.so vllm-preflight check
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;

static CUresult (*real_cuCtxGetDevice)(CUdevice *) = NULL;

CUresult cuCtxGetDevice(CUdevice *device) {
    if (real_cuCtxGetDevice == NULL) {
        real_cuCtxGetDevice = (CUresult(*)(CUdevice *))dlsym(RTLD_NEXT, "cuCtxGetDevice");
        if (real_cuCtxGetDevice == NULL) {
            return 999; /* CUDA_ERROR_UNKNOWN: libcuda is not loaded yet */
        }
    }
    CUresult rc = real_cuCtxGetDevice(device);
    const char *mode = getenv("CTXSHIM_MODE");
    if (rc != 201 || mode == NULL) {
        return rc;
    }
    if (strcmp(mode, "abort") == 0) {
        fprintf(stderr, "[AMP ERROR] [CudaFrontend.cpp:94] failed to call "
                        "cuCtxGetDevice(device), error code: CUDA_ERROR_INVALID_CONTEXT\n");
        abort();
    }
    if (strcmp(mode, "garbage") == 0) {
        *device = 850725928; /* the id in HAMi-core#187's crash */
        return 0;
    }
    if (strcmp(mode, "hang") == 0) {
        for (;;) {
            pause();
        }
    }
    if (strcmp(mode, "error") == 0) {
        return 999;
    }
    return rc;
}
