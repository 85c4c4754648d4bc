/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A program whose time goes to a large library: it loads libLLVM (the
 * largest shared library Debian's toolchain brings, its .eh_frame some
 * megabytes) and builds, verifies and prints a small IR module in a loop,
 * through the library's C API, so that samples land all over its code,
 * deep in C++ frames that only the library's CFI describes.
 *
 *   llvm-spin SECONDS [CPU [PAUSE_MS]]
 *       as tests/sampler's spin: burn SECONDS of CPU time, printing "ready
 *       PID" once the work has started; 0: until killed. CPU is taken and
 *       not used (the unwinder's capture passes one; no pinning is needed
 *       to sample a pid). PAUSE_MS: sleep that long after each module, for
 *       many of them at once on few CPUs.
 *   llvm-spin --probe
 *       exit 0 when a libLLVM loads, 77 when none does
 *
 * The library is opened by dlopen(3) under its Debian names, so that the
 * build needs no LLVM headers; without one it says so on stderr and exits
 * 77 (the tests skip).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define streq(a, b) (strcmp((a), (b)) == 0)

/* The C API's handles are opaque pointers (llvm-c/Types.h). */
typedef void *ref;

static const char *const libraries[] = {
        "libLLVM-17.so.1", "libLLVM-16.so.1", "libLLVM-15.so.1", "libLLVM-14.so.1", "libLLVM-13.so.1",
};

static struct {
        ref (*context_create)(void);
        void (*context_dispose)(ref);
        ref (*module_create)(const char *, ref);
        void (*module_dispose)(ref);
        ref (*int32)(ref);
        ref (*function_type)(ref, ref *, unsigned, int);
        ref (*add_function)(ref, const char *, ref);
        ref (*append_block)(ref, ref, const char *);
        ref (*builder_create)(ref);
        void (*builder_dispose)(ref);
        void (*position_at_end)(ref, ref);
        ref (*param)(ref, unsigned);
        ref (*build_add)(ref, ref, ref, const char *);
        ref (*build_mul)(ref, ref, ref, const char *);
        ref (*build_ret)(ref, ref);
        int (*verify)(ref, int, char **);
        char *(*print)(ref);
        void (*dispose_message)(char *);
} llvm;

static double cpu_seconds(void) {
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static int load(void) {
        void *h = NULL;
        struct {
                void **fn;
                const char *name;
        } syms[] = {
                { (void **) &llvm.context_create, "LLVMContextCreate" },
                { (void **) &llvm.context_dispose, "LLVMContextDispose" },
                { (void **) &llvm.module_create, "LLVMModuleCreateWithNameInContext" },
                { (void **) &llvm.module_dispose, "LLVMDisposeModule" },
                { (void **) &llvm.int32, "LLVMInt32TypeInContext" },
                { (void **) &llvm.function_type, "LLVMFunctionType" },
                { (void **) &llvm.add_function, "LLVMAddFunction" },
                { (void **) &llvm.append_block, "LLVMAppendBasicBlockInContext" },
                { (void **) &llvm.builder_create, "LLVMCreateBuilderInContext" },
                { (void **) &llvm.builder_dispose, "LLVMDisposeBuilder" },
                { (void **) &llvm.position_at_end, "LLVMPositionBuilderAtEnd" },
                { (void **) &llvm.param, "LLVMGetParam" },
                { (void **) &llvm.build_add, "LLVMBuildAdd" },
                { (void **) &llvm.build_mul, "LLVMBuildMul" },
                { (void **) &llvm.build_ret, "LLVMBuildRet" },
                { (void **) &llvm.verify, "LLVMVerifyModule" },
                { (void **) &llvm.print, "LLVMPrintModuleToString" },
                { (void **) &llvm.dispose_message, "LLVMDisposeMessage" },
        };

        for (size_t i = 0; i < sizeof(libraries) / sizeof(libraries[0]) && !h; i++)
                h = dlopen(libraries[i], RTLD_NOW | RTLD_LOCAL);
        if (!h)
                return -1;
        for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
                if (!(*syms[i].fn = dlsym(h, syms[i].name)))
                        return -1;
        return 0;
}

/* One module: a few functions of adds and multiplies, verified and printed. */
static void build_one(void) {
        ref ctx = llvm.context_create(), mod = llvm.module_create("spin", ctx), i32 = llvm.int32(ctx);
        ref params[2] = { i32, i32 }, fty = llvm.function_type(i32, params, 2, 0), b = llvm.builder_create(ctx);
        char *text, *err = NULL;

        for (int f = 0; f < 16; f++) {
                char name[sizeof("f") + 3 * sizeof(int)];
                ref fn, v;

                snprintf(name, sizeof(name), "f%d", f);
                fn = llvm.add_function(mod, name, fty);
                llvm.position_at_end(b, llvm.append_block(ctx, fn, "entry"));
                v = llvm.build_add(b, llvm.param(fn, 0), llvm.param(fn, 1), "s");
                for (int k = 0; k < 8; k++)
                        v = llvm.build_mul(b, v, llvm.param(fn, (unsigned) k & 1), "m");
                llvm.build_ret(b, v);
        }
        (void) llvm.verify(mod, 2 /* LLVMReturnStatusAction */, &err);
        if (err)
                llvm.dispose_message(err);
        text = llvm.print(mod);
        llvm.dispose_message(text);
        llvm.builder_dispose(b);
        llvm.module_dispose(mod);
        llvm.context_dispose(ctx);
}

int main(int argc, char **argv) {
        double seconds, end;
        long pause_ms = 0;

        if (argc < 2) {
                fprintf(stderr, "usage: %s SECONDS [CPU [PAUSE_MS]] | --probe\n", argv[0]);
                return 2;
        }
        if (load() < 0) {
                fprintf(stderr, "llvm-spin: no libLLVM (%s): %s\n", libraries[0], dlerror() ?: "not found");
                return 77;
        }
        if (streq(argv[1], "--probe"))
                return 0;
        seconds = atof(argv[1]);
        if (argc > 3)
                pause_ms = atol(argv[3]);
        build_one();
        printf("ready %d\n", (int) getpid());
        fflush(stdout);
        end = cpu_seconds() + seconds;
        while (seconds <= 0 || cpu_seconds() < end) {
                build_one();
                if (pause_ms > 0)
                        nanosleep(&(struct timespec) { .tv_sec = pause_ms / 1000, .tv_nsec = pause_ms % 1000 * 1000000 },
                                  NULL);
        }
        return 0;
}
