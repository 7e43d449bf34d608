/* nn_layer — the table of layer kinds: nn_layers.def's lines, each pointing at the entry
 * its kind's file defines (see nn_layer.h for how to add one). */
#include "nn/nn_layer.h"

const nn_layer *const nn_layers[NN_OP_COUNT] = {
#define NN_LAYER(ID, name) [NN_OP_##ID] = &nn_layer_##name,
#include "nn/nn_layers.def"
#undef NN_LAYER
};

const char *nn_op_name(nn_op op)
{
    static const char *const names[NN_OP_COUNT] = {
#define NN_LAYER(ID, name) [NN_OP_##ID] = #name,
#include "nn/nn_layers.def"
#undef NN_LAYER
    };
    return (int)op >= 0 && op < NN_OP_COUNT ? names[op] : "?";
}
