#include "property_gen.hpp"
