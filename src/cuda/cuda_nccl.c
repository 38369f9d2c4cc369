/* cuda_nccl.c - loading libnccl.so.2 at run time (cuda_nccl.h). */
#include "cuda/cuda_nccl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/err.h"

static const char LIBNAME[] = "libnccl.so.2";

static int try_open(cuda_nccl *n, const char *path) {
    n->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) return 0;
    snprintf(n->path, sizeof n->path, "%s", path);
    return 1;
}

/* $LAYA_NCCL_LIB: a file, or a folder holding libnccl.so.2. */
static int try_env(cuda_nccl *n) {
    const char *e = getenv("LAYA_NCCL_LIB");
    if (!e || !*e) return 0;
    struct stat sb;
    char path[1024];
    if (stat(e, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(path, sizeof path, "%s/%s", e, LIBNAME);
        return try_open(n, path);
    }
    return try_open(n, e);
}

/* The pip package nvidia-nccl-cu13 (or -cu12): its lib folder. */
static int try_python(cuda_nccl *n) {
    FILE *f = popen("python3 -c 'import os, nvidia.nccl as m; "
                    "print(os.path.dirname(m.__file__) if getattr(m, \"__file__\", None) else list(m.__path__)[0])' "
                    "2>/dev/null", "r");
    if (!f) return 0;
    char dir[768] = "";
    char *got = fgets(dir, sizeof dir, f);
    pclose(f);
    if (!got) return 0;
    dir[strcspn(dir, "\r\n")] = 0;
    if (!*dir) return 0;
    char path[1024];
    snprintf(path, sizeof path, "%s/lib/%s", dir, LIBNAME);
    return try_open(n, path);
}

#define SYM(name)                                                                                    \
    do {                                                                                             \
        *(void **)&n->name = dlsym(n->lib, "nccl" #name);                                            \
        if (!n->name) {                                                                              \
            laya_status st_ = err_set(err, errlen, LAYA_ERR_UNSUPPORTED, "%s has no nccl" #name,    \
                                      n->path);                                                      \
            cuda_nccl_close(n);                                                                      \
            return st_;                                                                              \
        }                                                                                            \
    } while (0)

laya_status cuda_nccl_open(cuda_nccl *n, char *err, size_t errlen) {
    memset(n, 0, sizeof *n);
    /* Before NCCL reads its environment (at its first communicator). */
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    if (!try_env(n) && !try_open(n, LIBNAME) && !try_python(n))
        return err_set(err, errlen, LAYA_ERR_UNSUPPORTED,
                       "cannot load %s (data-parallel training needs NCCL): looked in $LAYA_NCCL_LIB, the "
                       "library path and the Python package nvidia-nccl-cu13 (pip install nvidia-nccl-cu13; "
                       "or LAYA_NCCL_LIB=\"$(python3 -c 'import nvidia.nccl, os; "
                       "print(os.path.dirname(nvidia.nccl.__file__))')/lib\")",
                       LIBNAME);
    SYM(GetVersion);
    SYM(GetUniqueId);
    SYM(CommInitRank);
    SYM(CommInitAll);
    SYM(CommDestroy);
    SYM(GroupStart);
    SYM(GroupEnd);
    SYM(AllReduce);
    SYM(GetErrorString);
    if (n->GetVersion(&n->version) != NCCL_SUCCESS) n->version = 0;
    return LAYA_OK;
}

void cuda_nccl_close(cuda_nccl *n) {
    if (n->lib) dlclose(n->lib);
    memset(n, 0, sizeof *n);
}

laya_status cuda_nccl_err(const cuda_nccl *n, int r, const char *what, char *err, size_t errlen) {
    if (r == NCCL_SUCCESS) return LAYA_OK;
    return err_set(err, errlen, LAYA_ERR_INTERNAL, "%s: NCCL error %d (%s)", what, r,
                   n->GetErrorString ? n->GetErrorString(r) : "?");
}
