#include "svo/lod.h"
