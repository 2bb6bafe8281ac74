/* The options every frontend reads (struct fm_load_opts), with their defaults. Kept apart from
 * model.c, which dispatches to the frontends, so that a frontend filling in defaults for a NULL
 * option pointer does not call back up into the dispatcher. */
#include "flopmeter.h"

#include <string.h>

void fm_load_opts_init(struct fm_load_opts *opts)
{
    memset(opts, 0, sizeof(*opts));
    fm_zoo_opts_init(&opts->zoo);
}
