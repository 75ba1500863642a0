"""The CUDA runtime library that keeps fields on the GPU between applies: allocations, copies
between the host layout and the device's pitched rows, strided copies from other libraries'
arrays, free memory. Built once per toolchain by the same nvcc as the operators; its pointers
are valid in every operator's kernels (all use the process's primary CUDA context).

Each function returns 0 or a nonzero status and leaves the message in ``sg_rt_error()``.
"""
from __future__ import annotations

NAME = "stencilgen_cuda_runtime"
MAX_DIMS = 8

# element types of strided copies: numpy's kind and size (bfloat16, ml_dtypes' type of kind
# "V", by its name) -> the code passed, the C++ type
TYPES = {"f4": ("f", "float"), "f8": ("d", "double"), "f2": ("e", "__half"),
         "bfloat16": ("E", "__nv_bfloat16"),
         "i4": ("i", "int"), "i8": ("l", "long long"), "i2": ("h", "short"),
         "i1": ("b", "signed char"), "u1": ("B", "unsigned char"), "b1": ("?", "bool")}
TARGETS = ("f4", "f8", "f2", "bfloat16")   # the types a field may hold


def type_code(dtype) -> str | None:
    """The code of numpy type ``dtype`` in strided copies (None: not supported)."""
    key = "bfloat16" if dtype.name == "bfloat16" else f"{dtype.kind}{dtype.itemsize}"
    found = TYPES.get(key)
    return found[0] if found else None

_SOURCE = r"""
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdio.h>

static char sg_rt_text[2048];

extern "C" const char *sg_rt_error(void) { return sg_rt_text; }

static int sg_rt_fail(const cudaError_t err, const char *call)
{
  snprintf(sg_rt_text, sizeof(sg_rt_text), "CUDA call %%s failed: %%s (%%s)", call,
           cudaGetErrorString(err), cudaGetErrorName(err));
  return err == cudaErrorMemoryAllocation ? 2 : 1;
}

#define SG_RT(call) do { const cudaError_t sg_e = (call); \
  if (sg_e != cudaSuccess) return sg_rt_fail(sg_e, #call); } while (0)

/* n zeroed bytes on the GPU */
extern "C" int sg_rt_alloc(void **p, size_t n)
{
  *p = NULL;
  SG_RT(cudaMalloc(p, n ? n : 1));
  SG_RT(cudaMemset(*p, 0, n ? n : 1));
  return 0;
}

extern "C" int sg_rt_memset(void *p, size_t n)
{
  SG_RT(cudaMemset(p, 0, n));
  return 0;
}

extern "C" int sg_rt_free(void *p)
{
  SG_RT(cudaFree(p));
  return 0;
}

/* rows of width bytes: kind 1 host to device, 2 device to host, 3 device to device */
extern "C" int sg_rt_copy2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                            size_t width, size_t rows, int kind)
{
  const cudaMemcpyKind k = kind == 1 ? cudaMemcpyHostToDevice :
                           kind == 2 ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice;
  if (rows && width)
    SG_RT(cudaMemcpy2D(dst, dpitch, src, spitch, width, rows, k));
  return 0;
}

extern "C" int sg_rt_meminfo(size_t *free_bytes, size_t *total_bytes)
{
  SG_RT(cudaMemGetInfo(free_bytes, total_bytes));
  return 0;
}

extern "C" int sg_rt_synchronize(void)
{
  SG_RT(cudaDeviceSynchronize());
  return 0;
}

extern "C" int sg_rt_device(int *id)
{
  SG_RT(cudaGetDevice(id));
  return 0;
}

/* make GPU id current: its primary context, which every CUDA runtime in the process uses */
extern "C" int sg_rt_select(const int id, int *count)
{
  SG_RT(cudaGetDeviceCount(count));
  if (id >= 0)
    SG_RT(cudaSetDevice(id %% *count));
  return 0;
}

/* conversions, __half and __nv_bfloat16 through float (rounded to nearest even) */
template <typename D> struct sg_rt_to {
  template <typename S> static __device__ D from(const S v) { return (D)v; }
};
template <> struct sg_rt_to<__half> {
  template <typename S> static __device__ __half from(const S v)
  { return __float2half_rn((float)v); }
};
template <> struct sg_rt_to<__nv_bfloat16> {
  template <typename S> static __device__ __nv_bfloat16 from(const S v)
  { return __float2bfloat16_rn((float)v); }
};
static __device__ float sg_rt_wide(const __half v) { return __half2float(v); }
static __device__ float sg_rt_wide(const __nv_bfloat16 v) { return __bfloat162float(v); }
template <typename S> static __device__ S sg_rt_wide(const S v) { return v; }

struct sg_rt_shape { long n[%(dims)d]; long s[%(dims)d]; long d[%(dims)d]; int ndim; };

/* dst[i] = src[i] over a shape, each side with its own element strides (any order) */
template <typename S, typename D>
static __global__ void sg_rt_strided(D *dst, const S *src, const sg_rt_shape sh, const long n)
{
  for (long i = (long)blockIdx.x*blockDim.x + threadIdx.x; i < n;
       i += (long)blockDim.x*gridDim.x) {
    long rest = i, so = 0, dof = 0;
    for (int k = sh.ndim - 1; k >= 0; --k) {
      const long j = rest %% sh.n[k];
      rest /= sh.n[k];
      so += j*sh.s[k];
      dof += j*sh.d[k];
    }
    dst[dof] = sg_rt_to<D>::from(sg_rt_wide(src[so]));
  }
}

template <typename S, typename D>
static int sg_rt_launch(void *dst, const void *src, const sg_rt_shape &sh, const long n)
{
  const long blocks = (n + 255)/256 < 65536 ? (n + 255)/256 : 65536;
  sg_rt_strided<S, D><<<(unsigned)blocks, 256>>>((D *)dst, (const S *)src, sh, n);
  SG_RT(cudaGetLastError());
  SG_RT(cudaDeviceSynchronize());
  return 0;
}

template <typename D>
static int sg_rt_from(void *dst, const void *src, const char src_type, const sg_rt_shape &sh,
                      const long n)
{
  switch (src_type) {
%(cases)s
  }
  snprintf(sg_rt_text, sizeof(sg_rt_text), "strided copy: unsupported source type '%%c'",
           src_type);
  return 1;
}

/* A strided copy on the GPU between two arrays of ndim dimensions (element strides), the
   source converted to the destination's type ('f' float, 'd' double, 'e' __half or
   'E' __nv_bfloat16). */
extern "C" int sg_rt_strided_copy(void *dst, const long *dst_strides, const char dst_type,
                                  const void *src, const long *src_strides,
                                  const char src_type, const long *shape, const int ndim)
{
  sg_rt_shape sh = {};
  long n = 1;
  if (ndim > %(dims)d) {
    snprintf(sg_rt_text, sizeof(sg_rt_text), "strided copy: %%d dimensions, at most %(dims)d",
             ndim);
    return 1;
  }
  sh.ndim = ndim;
  for (int k = 0; k < ndim; ++k) {
    sh.n[k] = shape[k]; sh.s[k] = src_strides[k]; sh.d[k] = dst_strides[k]; n *= shape[k];
  }
  if (n == 0)
    return 0;
  if (dst_type == 'f')
    return sg_rt_from<float>(dst, src, src_type, sh, n);
  if (dst_type == 'd')
    return sg_rt_from<double>(dst, src, src_type, sh, n);
  if (dst_type == 'e')
    return sg_rt_from<__half>(dst, src, src_type, sh, n);
  if (dst_type == 'E')
    return sg_rt_from<__nv_bfloat16>(dst, src, src_type, sh, n);
  snprintf(sg_rt_text, sizeof(sg_rt_text), "strided copy: unsupported target type '%%c'",
           dst_type);
  return 1;
}
"""


def source() -> str:
    """The runtime library's CUDA C++ source."""
    cases = "\n".join(f"  case '{ch}': return sg_rt_launch<{ty}, D>(dst, src, sh, n);"
                      for ch, ty in TYPES.values())
    return _SOURCE % {"dims": MAX_DIMS, "cases": cases}
