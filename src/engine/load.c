/* load.c - the public loaders with options over a laya_model (include/laya.h):
 * laya_model_load_opts (a model file under the trust the options give,
 * model_sign.h: model_trust_opts) and laya_intent_load (an intent head
 * under that trust, checked against the model's identity and width). They
 * are the engine's, which owns laya_model, so that model/ and intent/ never
 * reach up into it (docs/DESIGN.md, "Layers"). */
#include "engine/engine.h"

#include <stdint.h>

#include "intent/intent.h"
#include "model/model.h"
#include "model/model_sign.h"
#include "util/err.h"

laya_status laya_model_load_opts(const char *path, const laya_load_opts *opts, laya_model **out, char *err,
                                 size_t errlen) {
    if (!path || !out) return err_set(err, errlen, LAYA_ERR_ARG, "laya_model_load_opts: NULL argument");
    *out = NULL;
    uint8_t keys[MODEL_MAX_TRUSTED][MODEL_KEY_BYTES];
    model_trust t;
    laya_status st = model_trust_opts(opts, &t, keys, err, errlen);
    if (st != LAYA_OK) return st;
    model *m = NULL;
    if ((st = model_load_opts(path, &t, &m, err, errlen)) != LAYA_OK) return st;
    if ((st = engine_model_wrap(m, 1, out)) != LAYA_OK) {
        model_free(m);
        return err_set(err, errlen, st, "%s: %s", path,
                       st == LAYA_ERR_FORMAT ? "the tokenizer has more ids than the model's vocabulary"
                                             : laya_status_str(st));
    }
    return LAYA_OK;
}

laya_status laya_intent_load(const char *path, const laya_model *m, const laya_load_opts *opts, laya_intent **out,
                             char *err, size_t errlen) {
    if (!path || !m || !out) return err_set(err, errlen, LAYA_ERR_ARG, "laya_intent_load: NULL argument");
    *out = NULL;
    uint8_t keys[MODEL_MAX_TRUSTED][MODEL_KEY_BYTES];
    model_trust t;
    laya_status st = model_trust_opts(opts, &t, keys, err, errlen);
    if (st != LAYA_OK) return st;
    char sum[65];
    if (model_identity(engine_model(m), sum) != LAYA_OK)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "the model has no data_blake2b to match a head against");
    return intent_load(path, &t, engine_model(m)->cfg.H, sum, out, err, errlen);
}
