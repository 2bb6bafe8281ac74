/* Progress on stderr, only when stderr is a terminal: a bar for the steps of a run ("steps:
 * timed steps", "epoch: warm-up"), one line for the figures of a probe ("probe: FMA peak" from a
 * session, "FMA peak" from flopmeter probe). The line is cleared when the work is done, so what
 * stays on the screen is the report. */
#include "cli.h"

#include <string.h>
#include <unistd.h>

void *cli_progress_user(const char *label)
{
    return isatty(2) ? (void *)(uintptr_t)(label ? label : "") : NULL;
}

void cli_progress(void *user, const char *what, int done, int total)
{
    if (!user)
        return;
    const char *label = user;
    if (done >= total) {
        fprintf(stderr, "\r%78s\r", "");
        fflush(stderr);
        return;
    }
    const char *colon = strchr(what, ':');
    if (!colon || strncmp(what, "probe:", 6) == 0) {
        fprintf(stderr, "\rprobing %-40.40s (%d/%d)", colon ? colon + 2 : what, done + 1, total);
        fflush(stderr);
        return;
    }
    enum { WIDTH = 30 };
    int fill = total > 0 ? done * WIDTH / total : 0;
    char bar[WIDTH + 1];
    for (int i = 0; i < WIDTH; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[WIDTH] = '\0';
    fprintf(stderr, "\r%.20s %.*s: [%s] %d/%d %-12s", label, (int)(colon - what), what, bar, done,
            total, colon + 2);
    fflush(stderr);
}
