/* What the calibration's three files share and no other file uses: the kinds a file may hold,
 * a new calibration and the order of its entries (calib_model.c), and the comma-separated
 * family lists of --leave-out (calib_sweep.c). */
#ifndef FM_CALIB_COMMON_H
#define FM_CALIB_COMMON_H

#include "../core/internal.h"
#include "calibration_internal.h"

/* calib_model.c: the kinds a calibration file may name, for messages */
extern const char fm_calib_known_kinds[];
/* A kind a file can hold: NUL-terminated within FM_CALIB_KIND_MAX, letters, digits and _. */
bool fm_calib_kind_valid(const char *kind);
/* A new calibration with the header of meta (NULL: an empty header) and n zeroed entries. */
enum fm_status fm_calib_new(struct fm_ctx *ctx, const struct fm_calibration *meta, size_t n,
                            struct fm_calibration **out);
/* Order of entries (and of groups of samples): class, kind, phase, warm before cold. */
int fm_calib_key_cmp(enum fm_class ca, const char *ka, enum fm_phase pa, bool cold_a,
                     enum fm_class cb, const char *kb, enum fm_phase pb, bool cold_b);

/* calib_sweep.c: steps through a comma-separated list: *item gets the next item and *len its
 * length; false at the end (*p NULL or ""). An empty item between two commas has length 0. */
bool fm_calib_list_next(const char **p, const char **item, size_t *len);
/* Whether the comma-separated list has name (the whole of one of its items). */
bool fm_calib_list_has(const char *list, const char *name, size_t len);
/* Whether a shape taken from the families in from (comma-separated, or NULL) is taken from a
 * family in the leave-out list. */
bool fm_calib_left_out(const char *from, const char *leave_out);
/* The full sweep's shapes of progress label `label` ("pool max") that --leave-out leave_out
 * (NULL: none) keeps. */
size_t fm_calib_sweep_count(const char *label, const char *leave_out);
/* The full sweep's shapes whose layer under test is one op (ReLU, SiLU, LayerNorm, Softmax,
 * MaxPool, Attention, ...) that --leave-out leave_out keeps. */
size_t fm_calib_sweep_op_count(enum fm_op op, const char *leave_out);

#endif
