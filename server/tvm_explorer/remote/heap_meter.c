/* tvm-explorer: what a run of the model allocates on the device (docs/memory.md, "Checked
 * against a run"), linked into the kernel library uploaded to a TVM RPC server.
 *
 * The local measurement (runtime/allocations.py) reads glibc's mallinfo2 after every call the
 * Relax VM makes, through the VM's set_instrument hook, in a fresh thread. A stock RPC server
 * cannot call back into this process, so the same is done on the device: tvmx_memory_run(vm,
 * function, inputs...) gives the VM this file's instrument, runs the function in a fresh thread (TVM's CPU
 * workspace pool is per thread) and keeps, after every call, its symbol and mallinfo2's bytes
 * in use (uordblks + hblkhd) above the value just before the run. tvmx_memory_read() returns
 * the record as text. The record lives in static storage (not malloc's), so it does not count
 * itself. mallinfo2 is looked up at run time (dlsym): a C library without it (not glibc 2.33+)
 * makes tvmx_memory_run fail with a message that says so.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <tvm/ffi/c_api.h>

/* TVM's export_library links with the C++ compiler: the exported names stay C's. */
#ifdef __cplusplus
#define TVMX_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define TVMX_EXPORT __attribute__((visibility("default")))
#endif

#define TVMX_CAPACITY 200000
#define TVMX_NAMES (8u << 20)

struct tvmx_mallinfo2 {
  size_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};
typedef struct tvmx_mallinfo2 (*tvmx_mallinfo2_fn)(void);

static tvmx_mallinfo2_fn tvmx_meter;
static int64_t tvmx_base, tvmx_after, tvmx_count, tvmx_names_used;
static int tvmx_truncated;
static int64_t tvmx_samples[TVMX_CAPACITY];
static uint32_t tvmx_name_at[TVMX_CAPACITY];
static char tvmx_names[TVMX_NAMES];
static char tvmx_text[TVMX_NAMES + 64 * TVMX_CAPACITY];

static int64_t tvmx_used(void) {
  struct tvmx_mallinfo2 m = tvmx_meter();
  return (int64_t)(m.uordblks + m.hblkhd);
}

static const char* tvmx_bytes_of(const TVMFFIAny* v, size_t* size) {
  if (v->type_index == kTVMFFISmallStr) {
    *size = v->small_str_len;
    return v->v_bytes;
  }
  if (v->type_index == kTVMFFIStr) {
    const TVMFFIByteArray* arr = (const TVMFFIByteArray*)((const char*)v->v_obj + sizeof(TVMFFIObject));
    *size = arr->size;
    return arr->data;
  }
  if (v->type_index == kTVMFFIRawStr) {
    *size = strlen(v->v_c_str);
    return v->v_c_str;
  }
  *size = 0;
  return "";
}

/* The VM's instrument: (func, symbol, before, ret, args...) -> 0 (run the call as usual). */
static int tvmx_instrument(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)self;
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = 0;
  if (num_args < 3 || args[2].v_int64 != 0) return 0; /* before the call */
  if (tvmx_count >= TVMX_CAPACITY) {
    tvmx_truncated = 1;
    return 0;
  }
  size_t size;
  const char* name = tvmx_bytes_of(&args[1], &size);
  if (tvmx_names_used + (int64_t)size + 1 > (int64_t)TVMX_NAMES) {
    tvmx_truncated = 1;
    return 0;
  }
  memcpy(tvmx_names + tvmx_names_used, name, size);
  tvmx_names[tvmx_names_used + size] = 0;
  tvmx_name_at[tvmx_count] = (uint32_t)tvmx_names_used;
  tvmx_names_used += (int64_t)size + 1;
  tvmx_samples[tvmx_count++] = tvmx_used();
  return 0;
}

typedef struct {
  TVMFFIObjectHandle set_instrument, instrument, main;
  const TVMFFIAny* inputs;
  int32_t num_inputs;
  int status;
} tvmx_job;

static void* tvmx_run_thread(void* arg) {
  tvmx_job* job = (tvmx_job*)arg;
  TVMFFIAny hook, rv;
  hook.type_index = kTVMFFIFunction;
  hook.zero_padding = 0;
  hook.v_obj = (TVMFFIObject*)job->instrument;
  rv.type_index = kTVMFFINone;
  rv.v_int64 = 0;
  job->status = TVMFFIFunctionCall(job->set_instrument, &hook, 1, &rv);
  if (job->status != 0) return NULL;
  tvmx_count = tvmx_names_used = tvmx_truncated = 0;
  tvmx_base = tvmx_used();
  rv.type_index = kTVMFFINone;
  rv.v_int64 = 0;
  job->status = TVMFFIFunctionCall(job->main, (TVMFFIAny*)job->inputs, job->num_inputs, &rv);
  if (job->status == 0 && rv.type_index >= kTVMFFIStaticObjectBegin) {
    tvmx_after = tvmx_used(); /* the result is still held, as in the local run */
    TVMFFIObjectDecRef(rv.v_obj);
  } else {
    tvmx_after = tvmx_used();
  }
  return NULL;
}

static TVMFFIAny tvmx_str(const char* text) {
  TVMFFIAny v;
  v.type_index = kTVMFFIRawStr;
  v.zero_padding = 0;
  v.v_c_str = text;
  return v;
}

static int tvmx_get(TVMFFIObjectHandle getter, const TVMFFIAny* module, TVMFFIAny name, TVMFFIObjectHandle* out) {
  TVMFFIAny args[3], rv;
  args[0] = *module;
  args[1] = name;
  args[2].type_index = kTVMFFIBool;
  args[2].zero_padding = 0;
  args[2].v_int64 = 0;
  rv.type_index = kTVMFFINone;
  rv.v_int64 = 0;
  if (TVMFFIFunctionCall(getter, args, 3, &rv) != 0) return -1;
  if (rv.type_index != kTVMFFIFunction) {
    TVMFFIErrorSetRaisedFromCStr("ValueError", "tvmx_memory_run: the VM has no such function");
    return -1;
  }
  *out = rv.v_obj;
  return 0;
}

/* tvmx_memory_run(vm_module, function, inputs...) -> number of calls recorded. */
TVMX_EXPORT int __tvm_ffi_tvmx_memory_run(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)self;
  if (tvmx_meter == NULL) tvmx_meter = (tvmx_mallinfo2_fn)dlsym(RTLD_DEFAULT, "mallinfo2");
  if (tvmx_meter == NULL) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "tvmx: the C library has no mallinfo2 (glibc 2.33 or later is needed)");
    return -1;
  }
  if (num_args < 2 || args[0].type_index != kTVMFFIModule) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "tvmx_memory_run: expected the VM module, its function, the inputs");
    return -1;
  }
  const char getter_name[] = "ffi.ModuleGetFunction";
  TVMFFIByteArray getter_key = {getter_name, sizeof(getter_name) - 1};
  TVMFFIObjectHandle getter = NULL;
  tvmx_job job = {NULL, NULL, NULL, args + 2, num_args - 2, 0};
  int status = TVMFFIFunctionGetGlobal(&getter_key, &getter);
  if (status == 0 && getter == NULL) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "tvmx_memory_run: no ffi.ModuleGetFunction");
    status = -1;
  }
  if (status == 0) status = tvmx_get(getter, &args[0], tvmx_str("set_instrument"), &job.set_instrument);
  if (status == 0) status = tvmx_get(getter, &args[0], args[1], &job.main);
  if (status == 0) status = TVMFFIFunctionCreate(NULL, tvmx_instrument, NULL, &job.instrument);
  if (status == 0) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, tvmx_run_thread, &job) != 0) {
      TVMFFIErrorSetRaisedFromCStr("RuntimeError", "tvmx_memory_run: could not start a thread");
      status = -1;
    } else {
      pthread_join(thread, NULL);
      status = job.status;
    }
  }
  if (job.set_instrument != NULL) {
    if (status == 0) { /* the VM lets go of the instrument */
      TVMFFIAny none, rv;
      none.type_index = kTVMFFINone;
      none.zero_padding = 0;
      none.v_int64 = 0;
      rv.type_index = kTVMFFINone;
      rv.v_int64 = 0;
      status = TVMFFIFunctionCall(job.set_instrument, &none, 1, &rv);
    }
    TVMFFIObjectDecRef(job.set_instrument);
  }
  if (job.main != NULL) TVMFFIObjectDecRef(job.main);
  if (job.instrument != NULL) TVMFFIObjectDecRef(job.instrument);
  if (getter != NULL) TVMFFIObjectDecRef(getter);
  if (status != 0) return status;
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = tvmx_count;
  return 0;
}

/* tvmx_memory_read() -> bytes: "base B after A truncated T\n" then "SYMBOL\tBYTES\n" per call
 * (bytes in use after the call, above the base). */
TVMX_EXPORT int __tvm_ffi_tvmx_memory_read(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)self;
  (void)args;
  (void)num_args;
  size_t at = (size_t)snprintf(tvmx_text, sizeof(tvmx_text), "base %lld after %lld truncated %d\n",
                               (long long)tvmx_base, (long long)(tvmx_after - tvmx_base), tvmx_truncated);
  for (int64_t i = 0; i < tvmx_count && at < sizeof(tvmx_text); ++i) {
    at += (size_t)snprintf(tvmx_text + at, sizeof(tvmx_text) - at, "%s\t%lld\n", tvmx_names + tvmx_name_at[i],
                           (long long)(tvmx_samples[i] - tvmx_base));
  }
  if (at > sizeof(tvmx_text)) at = sizeof(tvmx_text);
  TVMFFIByteArray text = {tvmx_text, at};
  return TVMFFIBytesFromByteArray(&text, result);
}
