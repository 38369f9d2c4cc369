/* cuda_nccl.h - NCCL, loaded at run time (C6 data parallelism).
 *
 * Laya does not need nccl.h or libnccl to build: cuda_nccl_open() dlopens
 * libnccl.so.2 and looks up the few functions the trainer uses, declared
 * here with NCCL's public ABI (src/nccl.h.in of NVIDIA/nccl: ncclResult_t,
 * ncclDataType_t and ncclRedOp_t are C enums, i.e. ints; ncclUniqueId is
 * 128 bytes; ncclComm_t is an opaque pointer). So `make cuda` builds
 * anywhere, and only `laya train --gpus N` needs the library.
 *
 * Where the library is looked for, in order:
 *   1. $LAYA_NCCL_LIB: the library file itself, or a folder holding
 *      libnccl.so.2;
 *   2. the dynamic loader's default path (LD_LIBRARY_PATH, ld.so.cache);
 *   3. the Python package nvidia-nccl-cu13 / -cu12 (pip install
 *      nvidia-nccl-cu13): its lib folder, found by running
 *        python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))"
 *      and appending /lib (or, where nvidia.nccl is a namespace package
 *      without __file__, its first __path__ entry + /lib).
 *
 * NVLink SHARP (NVLS, multicast objects) is kept off: cuda_nccl_open sets
 * NCCL_NVLS_ENABLE=0 unless the environment already sets it, before NCCL
 * reads its environment; nothing here calls cuMulticastCreate. */
#ifndef LAYA_CUDA_NCCL_H
#define LAYA_CUDA_NCCL_H

#include <stddef.h>

#include "laya.h"

/* The values of NCCL's nccl.h (checked against NVIDIA/nccl src/nccl.h.in). */
enum { NCCL_SUCCESS = 0, NCCL_FLOAT32 = 7, NCCL_FLOAT64 = 8, NCCL_SUM = 0 };
enum { NCCL_UNIQUE_ID_BYTES = 128 };

typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} cuda_nccl_id;
typedef void *cuda_nccl_comm;   /* ncclComm_t */

typedef struct {
    void *lib;                  /* dlopen handle */
    char path[1024];            /* where it was found */
    int version;                /* ncclGetVersion, e.g. 22805 for 2.28.5 */
    int (*GetVersion)(int *version);
    int (*GetUniqueId)(cuda_nccl_id *id);
    int (*CommInitRank)(cuda_nccl_comm *comm, int nranks, cuda_nccl_id id, int rank);
    int (*CommInitAll)(cuda_nccl_comm *comms, int ndev, const int *devlist);
    int (*CommDestroy)(cuda_nccl_comm comm);
    int (*GroupStart)(void);
    int (*GroupEnd)(void);
    int (*AllReduce)(const void *send, void *recv, size_t count, int dtype, int op, cuda_nccl_comm comm,
                     void *stream);
    const char *(*GetErrorString)(int result);
} cuda_nccl;

/* Loads libnccl.so.2 (see above) into n. Fails with LAYA_ERR_UNSUPPORTED
 * and a message naming the places searched when there is none. */
laya_status cuda_nccl_open(cuda_nccl *n, char *err, size_t errlen);
void cuda_nccl_close(cuda_nccl *n);

/* A message for an NCCL result r of call what, as a laya_status. */
laya_status cuda_nccl_err(const cuda_nccl *n, int r, const char *what, char *err, size_t errlen);

#endif
