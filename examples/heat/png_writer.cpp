#include "png_writer.hpp"

#include <png.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <stdexcept>

namespace heat {

namespace {

// A heat colour map: control points (value, r, g, b), linear in between.
std::array<unsigned char, 3> colour(float v) {
  static const float pts[][4] = {{0.00f, 0, 0, 0},       {0.20f, 40, 10, 90},    {0.45f, 180, 30, 60},
                                 {0.70f, 250, 130, 20},   {0.90f, 255, 230, 90},  {1.00f, 255, 255, 255}};
  v = std::clamp(v, 0.0f, 1.0f);
  size_t k = 1;
  while (k + 1 < std::size(pts) && v > pts[k][0]) ++k;
  const float f = (v - pts[k - 1][0]) / (pts[k][0] - pts[k - 1][0]);
  std::array<unsigned char, 3> c{};
  for (int i = 0; i < 3; ++i) c[i] = static_cast<unsigned char>(pts[k - 1][i + 1] + f * (pts[k][i + 1] - pts[k - 1][i + 1]) + 0.5f);
  return c;
}

}  // namespace

void write_png(const std::string& path, const std::vector<float>& field, int width, int height) {
  if (field.size() != size_t(width) * size_t(height)) throw std::runtime_error(path + ": field size does not match width x height");
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) throw std::runtime_error(path + ": cannot open for writing");
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    throw std::runtime_error(path + ": libpng initialisation failed");
  }
  const float mx = std::max(1e-20f, *std::max_element(field.begin(), field.end()));
  std::vector<unsigned char> rgb(size_t(width) * height * 3);
  for (size_t i = 0; i < field.size(); ++i) {
    auto c = colour(field[i] / mx);
    std::copy(c.begin(), c.end(), rgb.begin() + long(i * 3));
  }
  std::vector<png_bytep> rows(static_cast<size_t>(height));
  for (int y = 0; y < height; ++y) rows[size_t(y)] = rgb.data() + size_t(y) * width * 3;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw std::runtime_error(path + ": libpng failed while writing");
  }
  png_init_io(png, f.get());
  png_set_IHDR(png, info, png_uint_32(width), png_uint_32(height), 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
}

}  // namespace heat
