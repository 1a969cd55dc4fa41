#pragma once
// Writes a scalar field as an 8-bit RGB PNG (libpng) through a black-red-yellow-white colour map,
// scaled so the field's maximum is white. Throws std::runtime_error naming the file on failure.
#include <string>
#include <vector>

namespace heat {

void write_png(const std::string& path, const std::vector<float>& field, int width, int height);

}  // namespace heat
