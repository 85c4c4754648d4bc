/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pb-scratch.h"

#include <stdlib.h>

#include "strbuf.h"

void *pb_scratch_alloc(struct pb_scratch *sc, size_t size) {
        if (sc->n == sc->cap) {
                sc->cap = sc->cap ? sc->cap * 2 : 64;
                sc->ptrs = xrealloc(sc->ptrs, sc->cap * sizeof(void *));
        }
        return sc->ptrs[sc->n++] = xcalloc(1, size);
}

void pb_scratch_free(struct pb_scratch *sc) {
        for (size_t i = 0; i < sc->n; i++)
                free(sc->ptrs[i]);
        free(sc->ptrs);
        *sc = (struct pb_scratch) {};
}
