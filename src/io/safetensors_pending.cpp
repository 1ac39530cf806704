// Placeholder until the safetensors reader lands (removed by that change).
#include "wick/io.h"
