#pragma once
// Charts for the report as inline SVG, drawn the way the GUI draws them (the same
// palette, raw loss faint under a thick smoothed line, light grid, legend below), so a
// report opened anywhere needs nothing but the file. Qt-free: `crosslab-cli report` runs
// without a display and without Qt GUI.

#include <array>
#include <string>
#include <utility>
#include <vector>

namespace crosslab::report {

// The GUI's series colours (widgets/loss_chart.cpp uses the same list).
const std::array<const char*, 6>& chartPalette();

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y)
  int color = 0;        // index into the palette
  bool faint = false;   // raw values under a smoothed line
  bool markers = false; // a dot per point (throughput levels)
};

struct ChartSpec {
  std::string title, xLabel, yLabel;
  std::vector<ChartSeries> series;
  bool logX = false;  // concurrency 1, 2, 4 … 64
};

std::string renderSvgChart(const ChartSpec& spec, int width = 760, int height = 360);
// Exponential moving average, as the Training panel smooths loss.
std::vector<std::pair<double, double>> smoothEma(const std::vector<std::pair<double, double>>& points,
                                                 double alpha = 0.8);
std::string xmlEscape(const std::string& text);

}  // namespace crosslab::report
