/* What registry.c (the writers: the page source, the tree's slots, insert
 * and remove) and registry_read.c (the readers: lookup, claim, the walks)
 * share: the slot tag, the tree's geometry, the record chunk size.  Private
 * to registry/. */
#ifndef HP_REGISTRY_INT_H
#define HP_REGISTRY_INT_H

#include "registry.h"

/* A slot holds 0, a record pointer (records are 64-byte aligned) or a child
 * node pointer tagged with TAG_CHILD.  Tagging children rather than records
 * lets a lookup descend with one test per level and fold the untagging into
 * the next load's address. */
#define TAG_CHILD ((uintptr_t)1)
/* Pages spanned by one slot at each level. */
static const unsigned slot_shift[3] = {HP_L1_BITS + HP_L2_BITS, HP_L2_BITS, 0};
static const size_t level_slots[3] = {(size_t)1 << HP_L0_BITS,
				      (size_t)1 << HP_L1_BITS,
				      (size_t)1 << HP_L2_BITS};
/* Records come in chunks of this size; c[0] links the chunk list. */
#define REC_CHUNK ((size_t)1 << 16)

#endif
