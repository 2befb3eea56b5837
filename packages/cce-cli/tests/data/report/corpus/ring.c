/* Fixed-size ring buffer used by the native queue backend. */
#include <stdlib.h>
#include "queue.h"

struct ring_buffer {
    int *slots;
    size_t capacity;
    size_t head;
    size_t count;
};

struct ring_buffer *ring_create(size_t capacity) {
    struct ring_buffer *ring = malloc(sizeof *ring);
    if (ring == NULL) {
        return NULL;
    }
    ring->slots = calloc(capacity, sizeof(int));
    ring->capacity = capacity;
    ring->head = 0;
    ring->count = 0;
    return ring;
}

int ring_push(struct ring_buffer *ring, int value) {
    if (ring->count == ring->capacity) {
        return -1;
    }
    ring->slots[(ring->head + ring->count) % ring->capacity] = value;
    ring->count++;
    return 0;
}
