"""Identifiers that generated C, CUDA C++ and OpenACC code must never declare for a user name:
keywords, names from the headers it includes, CUDA and OpenMP/OpenACC API names, its own helpers."""
from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _suffixed(text: str, suffixes) -> frozenset[str]:
    return frozenset(w + s for w in text.split() for s in suffixes)


# C11 keywords, the C23 ones (gcc 15 compiles C23 by default), and K&R's `entry`, which sympy's
# C printer still renames (to `entry_`)
C_KEYWORDS = _words("""
    auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef
    union unsigned void volatile while
    _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert
    _Thread_local
    alignas alignof bool constexpr false nullptr static_assert thread_local true typeof
    typeof_unqual _BitInt _Decimal32 _Decimal64 _Decimal128
    entry asm
""")

# C++17 keywords and alternative operator tokens (nvcc and nvc++ compile our code as C++), the
# C++20 additions, and the identifiers with a special meaning in some contexts
CXX_KEYWORDS = _words("""
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
    char32_t class compl const constexpr const_cast continue decltype default delete do double
    dynamic_cast else enum explicit export extern false float for friend goto if inline int long
    mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public
    register reinterpret_cast return short signed sizeof static static_assert static_cast struct
    switch template this thread_local throw true try typedef typeid typename union unsigned using
    virtual void volatile wchar_t while xor xor_eq
    concept consteval constinit co_await co_return co_yield requires
    final override import module std
""")

# CUDA: execution-space and memory qualifiers, built-in variables and types
CUDA_KEYWORDS = _words("""
    __global__ __device__ __host__ __shared__ __constant__ __managed__ __restrict__
    __launch_bounds__ __forceinline__ __noinline__ __grid_constant__
    threadIdx blockIdx blockDim gridDim warpSize dim3 cudaError_t cudaError cudaEvent_t
    cudaStream_t cudaMemcpyKind cudaDeviceProp half nv_bfloat16
""") | _suffixed("""
    char uchar short ushort int uint long ulong longlong ulonglong float double
""", ("1", "2", "3", "4")) | _suffixed("""
    make_char make_uchar make_short make_ushort make_int make_uint make_long make_ulong
    make_longlong make_ulonglong make_float make_double
""", ("1", "2", "3", "4"))

# CUDA device functions: synchronisation, atomics, warp intrinsics, and the math functions
# beyond C's (plus the min/max overloads CUDA's headers declare on the host too)
CUDA_FUNCTIONS = _words("""
    __syncthreads __syncthreads_count __syncthreads_and __syncthreads_or __syncwarp
    __threadfence __threadfence_block __threadfence_system __ldg __shfl_sync __shfl_up_sync
    __shfl_down_sync __shfl_xor_sync __ballot_sync __any_sync __all_sync __activemask
    atomicAdd atomicSub atomicExch atomicMin atomicMax atomicInc atomicDec atomicCAS atomicAnd
    atomicOr atomicXor clock clock64 globaltimer
    min max umin umax llmin llmax ullmin ullmax
    rsqrt rsqrtf rcbrt rcbrtf sinpi sinpif cospi cospif sincos sincosf sincospi sincospif
    exp10 exp10f normcdf normcdff normcdfinv normcdfinvf erfinv erfinvf erfcinv erfcinvf erfcx
    erfcxf norm normf rnorm rnormf norm3d norm3df norm4d norm4df rnorm3d rnorm3df rnorm4d
    rnorm4df rhypot rhypotf cyl_bessel_i0 cyl_bessel_i0f cyl_bessel_i1 cyl_bessel_i1f
    saturate
""")

# the CUDA runtime API the generated code calls (and its neighbours), its error codes, NVTX
CUDA_RUNTIME = _words("""
    cudaMalloc cudaMallocManaged cudaMallocHost cudaHostAlloc cudaFree cudaFreeHost cudaMemcpy
    cudaMemcpyAsync cudaMemcpyToSymbol cudaMemcpyFromSymbol cudaMemset cudaMemsetAsync
    cudaMemGetInfo cudaMemcpyHostToDevice cudaMemcpyDeviceToHost cudaMemcpyDeviceToDevice
    cudaMemcpyHostToHost cudaMemcpyDefault cudaDeviceSynchronize cudaDeviceReset
    cudaGetLastError cudaPeekAtLastError cudaGetErrorString cudaGetErrorName cudaSuccess
    cudaEventCreate cudaEventCreateWithFlags cudaEventDestroy cudaEventRecord
    cudaEventSynchronize cudaEventElapsedTime cudaEventQuery cudaStreamCreate
    cudaStreamDestroy cudaStreamSynchronize cudaSetDevice cudaGetDevice cudaGetDeviceCount
    cudaGetDeviceProperties cudaDeviceGetAttribute cudaLaunchKernel cudaFuncSetAttribute
    cudaErrorIllegalAddress cudaErrorAssert cudaErrorLaunchFailure cudaErrorIllegalInstruction
    cudaErrorMisalignedAddress cudaErrorHardwareStackError cudaErrorInvalidPc
    cudaErrorLaunchTimeout cudaErrorMemoryAllocation cudaErrorInvalidValue
    nvtxRangePushA nvtxRangePop nvtxMarkA nvtxRangeStartA nvtxRangeEnd
""")

# macros of the C library headers, and those the compiler predefines (gcc's gnu modes define
# `linux` and `unix` as 1)
MACROS = _words("""
    NULL EOF BUFSIZ FILENAME_MAX FOPEN_MAX L_tmpnam TMP_MAX SEEK_SET SEEK_CUR SEEK_END
    EXIT_SUCCESS EXIT_FAILURE RAND_MAX MB_CUR_MAX errno assert offsetof
    INFINITY NAN HUGE_VAL HUGE_VALF HUGE_VALL FP_INFINITE FP_NAN FP_NORMAL FP_SUBNORMAL FP_ZERO
    FP_FAST_FMA FP_FAST_FMAF FP_FAST_FMAL FP_ILOGB0 FP_ILOGBNAN MATH_ERRNO MATH_ERREXCEPT
    math_errhandling fpclassify isfinite isinf isnan isnormal signbit isgreater isgreaterequal
    isless islessequal islessgreater isunordered
    CLOCKS_PER_SEC TIME_UTC TIMER_ABSTIME CLOCK_REALTIME CLOCK_MONOTONIC CLOCK_PROCESS_CPUTIME_ID
    CLOCK_THREAD_CPUTIME_ID CLOCK_MONOTONIC_RAW CLOCK_REALTIME_COARSE CLOCK_MONOTONIC_COARSE
    CLOCK_BOOTTIME CLOCK_REALTIME_ALARM CLOCK_BOOTTIME_ALARM CLOCK_TAI
    DBL_MAX DBL_MIN DBL_EPSILON FLT_MAX FLT_MIN FLT_EPSILON INT_MAX INT_MIN LONG_MAX LONG_MIN
    BYTE_ORDER BIG_ENDIAN LITTLE_ENDIAN PDP_ENDIAN FD_SETSIZE NFDBITS FD_SET FD_CLR FD_ISSET
    FD_ZERO WNOHANG WUNTRACED WSTOPPED WEXITED WCONTINUED WNOWAIT WEXITSTATUS WTERMSIG WSTOPSIG
    WIFEXITED WIFSIGNALED WIFSTOPPED WIFCONTINUED
    htobe16 htole16 be16toh le16toh htobe32 htole32 be32toh le32toh htobe64 htole64 be64toh
    le64toh
    linux unix i386
""")

# the mathematical constants of math.h (POSIX), with glibc's long double (l) and float (f) forms
MATH_CONSTANTS = _suffixed("""
    M_E M_LOG2E M_LOG10E M_LN2 M_LN10 M_PI M_PI_2 M_PI_4 M_1_PI M_2_PI M_2_SQRTPI M_SQRT2
    M_SQRT1_2
""", ("", "l", "f"))

# every C99 math.h function, in its double, float (f) and long double (l) forms
MATH_FUNCTIONS = _suffixed("""
    acos asin atan atan2 cos sin tan acosh asinh atanh cosh sinh tanh exp exp2 expm1 frexp ilogb
    ldexp log log10 log1p log2 logb modf scalbn scalbln cbrt fabs hypot pow sqrt erf erfc lgamma
    tgamma ceil floor nearbyint rint lrint llrint round lround llround trunc fmod remainder
    remquo copysign nan nextafter nexttoward fdim fmax fmin fma
""", ("", "f", "l")) | _words("float_t double_t")

# what glibc's math.h declares beyond C99 (Bessel functions, BSD and GNU extras)
MATH_EXTRAS = _suffixed("""
    j0 j1 jn y0 y1 yn gamma lgamma_r drem finite isinf isnan significand scalb exp10 pow10
    sincos
""", ("", "f", "l")) | _words("signgam")

# stdlib.h, stddef.h and stdint.h (with the POSIX/BSD names glibc adds in its default mode)
STDLIB = _words("""
    malloc calloc realloc reallocarray free aligned_alloc posix_memalign valloc alloca exit abort
    atexit at_quick_exit quick_exit on_exit _Exit getenv setenv unsetenv putenv clearenv system
    atoi atol atoll atof strtod strtof strtold strtol strtoll strtoul strtoull strtoq strtouq rand
    srand rand_r random srandom initstate setstate drand48 erand48 lrand48 nrand48 mrand48
    jrand48 srand48 seed48 lcong48 qsort bsearch abs labs llabs div ldiv lldiv div_t ldiv_t
    lldiv_t mblen mbtowc wctomb mbstowcs wcstombs realpath mkstemp mkdtemp mktemp
    ecvt fcvt gcvt getloadavg environ
    size_t ssize_t ptrdiff_t wchar_t max_align_t nullptr_t
    int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t
    intmax_t uintmax_t uint ulong ushort u_char u_short u_int u_long quad_t u_quad_t
    off_t pid_t uid_t gid_t mode_t dev_t ino_t key_t clockid_t timer_t register_t select
    va_list va_start va_arg va_end va_copy
""")

# stdio.h and string.h
STDIO = _words("""
    printf fprintf sprintf snprintf dprintf vprintf vfprintf vsprintf vsnprintf vdprintf scanf
    fscanf sscanf vscanf vfscanf vsscanf puts fputs fputc putc putchar getc getchar fgetc fgets
    getline getdelim ungetc fopen freopen fdopen fclose fflush fread fwrite fseek fseeko ftell
    ftello fgetpos fsetpos rewind feof ferror clearerr perror remove rename tmpfile tmpnam
    setbuf setvbuf fileno popen pclose FILE fpos_t stdin stdout stderr
    memcpy memmove memset memcmp memchr memccpy strcpy strncpy stpcpy strcat strncat strcmp
    strncmp strcasecmp strncasecmp strlen strnlen strchr strrchr strstr strtok strtok_r strerror
    strdup strndup strcoll strxfrm strspn strcspn strpbrk strsep strsignal bzero bcopy bcmp
    index rindex ffs
""")

# time.h: `time` itself is deliberately absent: it is the time loop's counter and a dimension
# name, taken like any other; a local `time` shadowing time() is harmless since the generated
# code never calls it
TIME = _words("""
    clock difftime mktime gmtime gmtime_r localtime localtime_r asctime ctime strftime
    timespec_get clock_gettime clock_getres clock_settime clock_nanosleep nanosleep timegm
    tzset timezone daylight tzname clock_t time_t timespec timeval tm itimerspec
""")

# the OpenMP API (omp.h): routines, types and enumerators
OPENMP = _words("""
    omp_get_wtime omp_get_wtick omp_get_thread_num omp_get_num_threads omp_get_max_threads
    omp_set_num_threads omp_get_num_procs omp_in_parallel omp_set_dynamic omp_get_dynamic
    omp_set_nested omp_get_nested omp_set_schedule omp_get_schedule omp_get_thread_limit
    omp_set_max_active_levels omp_get_max_active_levels omp_get_level
    omp_get_ancestor_thread_num omp_get_team_size omp_get_active_level omp_in_final
    omp_get_cancellation omp_get_proc_bind omp_get_num_places omp_get_place_num
    omp_get_place_num_procs omp_get_place_proc_ids omp_get_partition_num_places
    omp_get_partition_place_nums omp_get_default_device omp_set_default_device
    omp_get_num_devices omp_get_device_num omp_get_num_teams omp_get_team_num
    omp_set_num_teams omp_get_max_teams omp_get_teams_thread_limit omp_set_teams_thread_limit
    omp_is_initial_device omp_get_initial_device omp_get_max_task_priority
    omp_get_supported_active_levels omp_pause_resource omp_pause_resource_all
    omp_display_env omp_display_affinity omp_capture_affinity omp_set_affinity_format
    omp_get_affinity_format omp_fulfill_event
    omp_init_lock omp_init_lock_with_hint omp_destroy_lock omp_set_lock omp_unset_lock
    omp_test_lock omp_init_nest_lock omp_init_nest_lock_with_hint omp_destroy_nest_lock
    omp_set_nest_lock omp_unset_nest_lock omp_test_nest_lock
    omp_target_alloc omp_target_free omp_target_is_present omp_target_memcpy
    omp_target_memcpy_rect omp_target_associate_ptr omp_target_disassociate_ptr
    omp_alloc omp_aligned_alloc omp_calloc omp_aligned_calloc omp_realloc omp_free
    omp_init_allocator omp_destroy_allocator omp_set_default_allocator omp_get_default_allocator
    omp_lock_t omp_nest_lock_t omp_sched_t omp_sched_static omp_sched_dynamic omp_sched_guided
    omp_sched_auto omp_sched_monotonic omp_proc_bind_t omp_proc_bind_false omp_proc_bind_true
    omp_proc_bind_master omp_proc_bind_primary omp_proc_bind_close omp_proc_bind_spread
    omp_lock_hint_t omp_sync_hint_t omp_pause_resource_t omp_pause_soft omp_pause_hard
    omp_allocator_handle_t omp_memspace_handle_t omp_alloctrait_t omp_alloctrait_key_t
    omp_alloctrait_value_t omp_event_handle_t omp_depend_t omp_interop_t omp_uintptr_t
    omp_null_allocator omp_default_mem_alloc omp_large_cap_mem_alloc omp_const_mem_alloc
    omp_high_bw_mem_alloc omp_low_lat_mem_alloc omp_cgroup_mem_alloc omp_pteam_mem_alloc
    omp_thread_mem_alloc omp_default_mem_space omp_large_cap_mem_space omp_const_mem_space
    omp_high_bw_mem_space omp_low_lat_mem_space
""")

# the OpenACC API (openacc.h): routines, types and enumerators
OPENACC = _words("""
    acc_get_num_devices acc_set_device_type acc_get_device_type acc_set_device_num
    acc_get_device_num acc_get_property acc_get_property_string acc_init acc_shutdown
    acc_on_device acc_async_test acc_async_test_all acc_wait acc_wait_async acc_wait_all
    acc_wait_all_async acc_async_wait acc_async_wait_all acc_get_default_async
    acc_set_default_async acc_malloc acc_free acc_copyin acc_copyin_async acc_create
    acc_create_async acc_copyout acc_copyout_async acc_copyout_finalize
    acc_copyout_finalize_async acc_delete acc_delete_async acc_delete_finalize
    acc_delete_finalize_async acc_update_device acc_update_device_async acc_update_self
    acc_update_self_async acc_map_data acc_unmap_data acc_deviceptr acc_hostptr acc_is_present
    acc_memcpy_to_device acc_memcpy_to_device_async acc_memcpy_from_device
    acc_memcpy_from_device_async acc_memcpy_device acc_memcpy_device_async acc_attach
    acc_attach_async acc_detach acc_detach_async acc_detach_finalize acc_detach_finalize_async
    acc_present_or_copyin acc_pcopyin acc_present_or_create acc_pcreate acc_get_cuda_stream
    acc_set_cuda_stream acc_get_current_cuda_device acc_get_current_cuda_context
    acc_register_library acc_prof_register acc_prof_unregister acc_prof_lookup
    acc_device_t acc_device_none acc_device_default acc_device_host acc_device_not_host
    acc_device_nvidia acc_device_radeon acc_device_gcn acc_device_current acc_device_property_t
    acc_property_memory acc_property_free_memory acc_property_name acc_property_vendor
    acc_property_driver acc_async_t acc_async_noval acc_async_sync acc_async_default
""")

# what the generated code itself defines at file scope without a reserved prefix: its macros
# (CUDA's SG_*, OpenACC's STENCILGEN_*) and the program entry point
GENERATED = _words("""
    SG_CHECK SG_CHECK_AS SG_SLOTS SG_SAMPLE SG_NARROW_MAX SG_TIMER_START SG_TIMER_START_IF
    SG_TIMER_STOP SG_GRID_WAIT
    STENCILGEN_EXPORT STENCILGEN_ACC_HOST STENCILGEN_WIDE_INDEX
    main
""")

RESERVED: frozenset[str] = frozenset().union(
    C_KEYWORDS, CXX_KEYWORDS, CUDA_KEYWORDS, CUDA_FUNCTIONS, CUDA_RUNTIME, MACROS,
    MATH_CONSTANTS, MATH_FUNCTIONS, MATH_EXTRAS, STDLIB, STDIO, TIME, OPENMP, OPENACC, GENERATED)

# sg_ and stencilgen_ name the generated code's runtime helpers; C reserves leading "__"
RESERVED_PREFIXES = ("sg_", "stencilgen_", "__")


def is_reserved(name: str) -> bool:
    """Whether ``name`` may not be declared as it is: a listed word, a reserved prefix, a leading
    underscore and capital (reserved by C), or a double underscore anywhere (reserved by C++)."""
    return (name in RESERVED or name.startswith(RESERVED_PREFIXES) or "__" in name
            or (len(name) > 1 and name[0] == "_" and name[1].isupper()))
