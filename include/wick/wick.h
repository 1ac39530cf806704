// wick: a C++20 tensor library for running neural networks on CPUs and NVIDIA GPUs.
// The umbrella header.
#pragma once

#include "wick/build_info.h"
#include "wick/device.h"
#include "wick/dtype.h"
#include "wick/error.h"
#include "wick/event.h"
#include "wick/experts.h"
#include "wick/graph.h"
#include "wick/half.h"
#include "wick/io.h"
#include "wick/layout.h"
#include "wick/nn.h"
#include "wick/op_support.h"
#include "wick/ops.h"
#include "wick/scalar.h"
#include "wick/shape.h"
#include "wick/storage.h"
#include "wick/tensor.h"
#include "wick/threads.h"
