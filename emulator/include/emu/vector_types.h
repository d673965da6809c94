// CUDA's built-in vector types and dim3, laid out and aligned as nvcc lays them out.
#pragma once
#include <cstdint>

#define EMU_VEC2(T, N, A)             \
  struct alignas(A) N##2 {            \
    T x, y;                           \
  };                                  \
  inline N##2 make_##N##2(T x, T y) { \
    return N##2 {x, y};               \
  }
#define EMU_VEC3(T, N)                     \
  struct N##3 {                            \
    T x, y, z;                             \
  };                                       \
  inline N##3 make_##N##3(T x, T y, T z) { \
    return N##3 {x, y, z};                 \
  }
#define EMU_VEC4(T, N, A)                       \
  struct alignas(A) N##4 {                      \
    T x, y, z, w;                               \
  };                                            \
  inline N##4 make_##N##4(T x, T y, T z, T w) { \
    return N##4 {x, y, z, w};                   \
  }

EMU_VEC2(float, float, 8)
EMU_VEC3(float, float)
EMU_VEC4(float, float, 16)
EMU_VEC2(int, int, 8)
EMU_VEC3(int, int)
EMU_VEC4(int, int, 16)
EMU_VEC2(unsigned int, uint, 8)
EMU_VEC3(unsigned int, uint)
EMU_VEC4(unsigned int, uint, 16)
EMU_VEC2(double, double, 16)
EMU_VEC4(double, double, 16)  // CUDA 13 aligns double4 to 16 (double4_16a)
EMU_VEC2(unsigned short, ushort, 4)
EMU_VEC4(unsigned short, ushort, 8)
EMU_VEC2(short, short, 4)
EMU_VEC4(short, short, 8)
EMU_VEC2(unsigned char, uchar, 2)
EMU_VEC4(unsigned char, uchar, 4)
EMU_VEC2(signed char, char, 2)
EMU_VEC4(signed char, char, 4)
EMU_VEC2(long long, longlong, 16)
EMU_VEC2(unsigned long long, ulonglong, 16)

#undef EMU_VEC2
#undef EMU_VEC3
#undef EMU_VEC4

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};
