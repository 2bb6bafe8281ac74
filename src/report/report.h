/* Internal to src/report: small pieces several renderers share. Public renderers are declared in
 * flopmeter.h; nothing here is API. */
#ifndef FM_REPORT_H
#define FM_REPORT_H

#include "flopmeter.h"
#include "../analysis/calibration_internal.h"
#include "../analysis/session_internal.h"
#include "../frontend/profile/profile.h"
#include "../core/jsonw.h"

/* "torch-default" or the precision's name, for a prediction's options. */
const char *fm_report_precision_label(const struct fm_predict_opts *po);
/* "memory" or "compute": where a kernel sits on its roofline (no bytes: compute). */
const char *fm_report_bound(const struct fm_phase_time *t);
/* A fraction as a percentage with one decimal: "41.3%". buf holds FM_FORMAT_SIZE bytes. */
const char *fm_report_pct(double x, char *buf);
/* The precision and unit kind of a ceiling, and which classes ran on it (roofline, svg). */
struct fm_report_ceiling {
    enum fm_precision prec;
    bool tensor;
    double peak;
    unsigned classes;    /* bit per enum fm_class; bit FM_CLASS_COUNT = optimizer */
};
size_t fm_report_ceilings(const struct fm_graph *g, const struct fm_prediction *p,
                          struct fm_report_ceiling *out, size_t max);

/* The per-layer-phase CSV rows of a prediction (roofline, predict): for every node and phase
 * that does work, index,name,op,class,phase,precision,unit,flops,bytes, then tail() prints the
 * rest of the row and its newline. */
void fm_report_csv_layers(FILE *f, const struct fm_graph *g, const struct fm_counts *c,
                          const struct fm_prediction *p,
                          void (*tail)(FILE *f, const struct fm_phase_time *t));

/* The loss of a step into the open JSON object: "summary" and "losses" (kind, added, node,
 * output, classes, positions). */
void fm_report_json_loss(struct fm_jw *w, const struct fm_graph *g, const struct fm_loss_info *l);

/* Whether the step fits the device: a table line ("  fits device ...") and the JSON "memory"
 * object; nothing when no device's memory was checked. */
void fm_report_memory_line(FILE *f, const struct fm_memory_check *m);
void fm_report_json_memory(struct fm_jw *w, const struct fm_memory_check *m);
/* How the session stored float tensors: "storage fp16 activations, fp32 weights (mixed
 * precision)" for a header, and the JSON "storage" object. */
const char *fm_report_storage(const struct fm_session *s, char *buf, size_t size);
void fm_report_json_storage(struct fm_jw *w, const struct fm_session *s);

/* The end of a render: FM_OK, or FM_ERR_IO with a message on ctx when a write to f failed. */
enum fm_status fm_report_end(struct fm_ctx *ctx, FILE *f);
/* A session that lacks what a renderer needs (no prediction, no measurement ...): FM_ERR_INVALID
 * with a message naming the renderer and what is missing. */
enum fm_status fm_report_lacks(struct fm_ctx *ctx, const char *report, const char *what);

#endif
