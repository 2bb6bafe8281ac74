/* What the libFuzzer targets share: a check that aborts (so the fuzzer records the input) with
 * a message, the status contract every library call keeps, and the entry point. The targets
 * are harnesses, not library code: printing and abort() are allowed here. */
#ifndef FM_FUZZ_COMMON_H
#define FM_FUZZ_COMMON_H

#include "flopmeter.h"
/* the targets check the records behind the readers' opaque handles */
#include "../src/frontend/profile/profile.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond, ...)                                                  \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz check failed at %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* A failure is a known status with a message; success leaves no demand on the message. */
static inline void fuzz_check_status(struct fm_ctx *ctx, enum fm_status st)
{
    FUZZ_CHECK((unsigned)st < FM_STATUS_COUNT, "status %d is not an enum fm_status", (int)st);
    if (st != FM_OK) {
        const char *msg = fm_ctx_error(ctx);
        FUZZ_CHECK(msg && *msg, "status '%s' came without a message", fm_status_to_string(st));
    }
}

/* Each target defines fm_fuzz_<name>(data, size) and FUZZ_ENTRY(fm_fuzz_<name>). */
#define FUZZ_ENTRY(fn)                                                          \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);               \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                \
    {                                                                           \
        return fn(data, size);                                                  \
    }

int fm_fuzz_onnx(const uint8_t *data, size_t size);
int fm_fuzz_device_json(const uint8_t *data, size_t size);
int fm_fuzz_args(const uint8_t *data, size_t size);
int fm_fuzz_trace(const uint8_t *data, size_t size);
int fm_fuzz_ncu(const uint8_t *data, size_t size);
int fm_fuzz_llm_config(const uint8_t *data, size_t size);
int fm_fuzz_cluster(const uint8_t *data, size_t size);

#endif
