/* The op registry: enum fm_op -> display name, class and descriptor, generated from
 * FM_OP_LIST (flopmeter.h), so the table and the enum cannot disagree and a descriptor the list
 * names but no family file defines fails the link. */
#include "ops.h"

struct op_entry {
    const char *name;
    enum fm_class cls;
    const struct fm_op_desc *desc;
};

#define FM_OP_ENTRY_(ID, desc, name, cls) \
    {name, FM_CLASS_##cls, &fm_op_##desc##_desc},
static const struct op_entry table[] = {FM_OP_LIST(FM_OP_ENTRY_)};
#undef FM_OP_ENTRY_
/* in list order, as the enum: entry i is op i */
_Static_assert(sizeof(table) / sizeof(table[0]) == FM_OP_COUNT, "one entry per enum fm_op");

const struct fm_op_desc *fm_op_desc(enum fm_op op)
{
    return table[(unsigned)op < FM_OP_COUNT ? op : FM_OP_UNKNOWN].desc;
}

const char *fm_op_name(enum fm_op op)
{
    return table[(unsigned)op < FM_OP_COUNT ? op : FM_OP_UNKNOWN].name;
}

enum fm_class fm_op_class(enum fm_op op)
{
    return table[(unsigned)op < FM_OP_COUNT ? op : FM_OP_UNKNOWN].cls;
}
