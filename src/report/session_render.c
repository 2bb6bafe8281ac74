/* fm_session_render: a session's report as a string, the same text its command prints on stdout
 * (count, roofline, predict, utilization, measure), for a program that has no FILE to hand a
 * renderer (the Python package reaches the library through ctypes). It renders into a memory
 * stream and copies the result into the session context's allocator, so that the caller frees it
 * with fm_dealloc like everything else the library allocates. It renders nothing of its own:
 * each task goes to its renderer. It deliberately leaves out what a command writes to stderr
 * (utilization's IMPOSSIBLE note outside the table; the JSON says "impossible") and --peers,
 * which the caller asks for with opts->peers. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

enum fm_status fm_session_render(const struct fm_session *s, const struct fm_report_opts *opts,
                                 char **out, size_t *len)
{
    if (!out || !len)
        return s && s->ctx ? fm_error(s->ctx, FM_ERR_INVALID, "fm_session_render: no place to "
                                      "put the text (out and len must be given)")
                           : FM_ERR_INVALID;
    *out = NULL;
    *len = 0;
    if (!s || !s->ctx)
        return FM_ERR_INVALID;
    struct fm_ctx *ctx = s->ctx;
    struct fm_report_opts ro;
    if (opts)
        ro = *opts;
    else
        fm_report_opts_init(&ro);
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory rendering the %s report",
                        fm_task_name(s->opts.task));
    enum fm_status st;
    switch (s->opts.task) {
    case FM_TASK_WORK:
        /* what the count command adds to its report: the loss of the step, the memory check
         * against a device, the note on an inference export */
        if (!ro.loss)
            ro.loss = &s->loss;
        if (!ro.memory)
            ro.memory = &s->memory;
        if (!ro.export_note)
            ro.export_note = s->export_note;
        st = s->graph && s->counts ? fm_report_count(f, s->graph, s->counts, &ro)
                                   : FM_ERR_INVALID;
        break;
    case FM_TASK_ROOFLINE: st = fm_report_roofline(f, s, &ro); break;
    case FM_TASK_PREDICT: st = fm_report_predict(f, s, &ro); break;
    case FM_TASK_UTILIZATION: st = fm_report_utilization(f, s, &ro); break;
    case FM_TASK_MEASURE: st = fm_report_measure(f, s, &ro); break;
    default: st = FM_ERR_INVALID; break;
    }
    /* fclose fails only when the stream could not grow: out of memory */
    if (fclose(f) != 0 && !st)
        st = FM_ERR_NOMEM;
    if (st) {
        free(buf);
        if (st == FM_ERR_INVALID)
            return fm_error(ctx, st, "the %s session lacks what its report renders",
                            fm_task_name(s->opts.task));
        return fm_error(ctx, st, "could not render the %s report (%s)",
                        fm_task_name(s->opts.task), fm_status_to_string(st));
    }
    char *text = fm_alloc(ctx, size + 1);
    if (!text) {
        free(buf);
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory rendering the %s report",
                        fm_task_name(s->opts.task));
    }
    memcpy(text, buf, size);
    text[size] = '\0';
    free(buf);
    *out = text;
    *len = size;
    return FM_OK;
}
