#include "core/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace crosslab::report {
namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string tickLabel(double v, double step) {
  char buf[32];
  const int decimals = step >= 1 ? 0 : std::min(6, static_cast<int>(std::ceil(-std::log10(step))));
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Ticks at 1, 2 or 5 × 10^k covering [lo, hi].
std::vector<double> niceTicks(double& lo, double& hi, int target = 5) {
  if (!(hi > lo)) {
    const double pad = std::abs(lo) > 0 ? std::abs(lo) * 0.1 : 1.0;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  lo = std::floor(lo / step) * step;
  hi = std::ceil(hi / step) * step;
  std::vector<double> ticks;
  for (double t = lo; t <= hi + step * 1e-6; t += step) ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

}  // namespace

const std::array<const char*, 6>& chartPalette() {
  static const std::array<const char*, 6> palette = {"#2f6fde", "#e4572e", "#17a398", "#9c51b6", "#f3a712", "#5d6d7e"};
  return palette;
}

std::string xmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<std::pair<double, double>> smoothEma(const std::vector<std::pair<double, double>>& points, double alpha) {
  std::vector<std::pair<double, double>> out;
  double s = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    s = i == 0 ? points[i].second : alpha * s + (1 - alpha) * points[i].second;
    out.emplace_back(points[i].first, s);
  }
  return out;
}

std::string renderSvgChart(const ChartSpec& spec, int width, int height) {
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
  for (const auto& s : spec.series)
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y) || (spec.logX && x <= 0)) continue;
      const double xv = spec.logX ? std::log2(x) : x;
      xlo = std::min(xlo, xv);
      xhi = std::max(xhi, xv);
      ylo = std::min(ylo, y);
      yhi = std::max(yhi, y);
    }
  const bool empty = !std::isfinite(xlo);
  if (empty) xlo = 0, xhi = 1, ylo = 0, yhi = 1;
  if (!spec.logX) niceTicks(xlo, xhi);  // round the x range too
  const auto yTicks = niceTicks(ylo, yhi);
  if (spec.logX && !(xhi > xlo)) xlo -= 1, xhi += 1;

  // Legend rows below the plot, three entries a row.
  std::vector<const ChartSeries*> legend;
  for (const auto& s : spec.series)
    if (!s.faint && !s.name.empty()) legend.push_back(&s);
  const int legendRows = static_cast<int>((legend.size() + 2) / 3);
  const double left = 64, right = 16, top = 34, bottom = 52 + 20.0 * legendRows;
  const double pw = width - left - right, ph = height - top - bottom;
  auto X = [&](double x) { return left + ((spec.logX ? std::log2(x) : x) - xlo) / (xhi - xlo) * pw; };
  auto Y = [&](double y) { return top + (1 - (y - ylo) / (yhi - ylo)) * ph; };

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" role=\"img\" width=\"" +
                    std::to_string(width) + "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " +
                    std::to_string(width) + " " + std::to_string(height) +
                    "\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"11\">\n";
  svg += "<title>" + xmlEscape(spec.title) + "</title>\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  svg += "<text x=\"" + num(left) + "\" y=\"20\" font-size=\"13\" font-weight=\"bold\" fill=\"#222\">" +
         xmlEscape(spec.title) + "</text>\n";
  // Grid and y ticks.
  for (double t : yTicks) {
    svg += "<line x1=\"" + num(left) + "\" x2=\"" + num(left + pw) + "\" y1=\"" + num(Y(t)) + "\" y2=\"" + num(Y(t)) +
           "\" stroke=\"#e3e3e3\"/>";
    svg += "<text x=\"" + num(left - 6) + "\" y=\"" + num(Y(t) + 4) + "\" text-anchor=\"end\" fill=\"#555\">" +
           tickLabel(t, yTicks.size() > 1 ? yTicks[1] - yTicks[0] : 1) + "</text>\n";
  }
  // x ticks: powers of two on a log axis, nice numbers otherwise.
  std::vector<double> xTicks;
  if (spec.logX) {
    for (double e = std::ceil(xlo); e <= xhi + 1e-9; ++e) xTicks.push_back(std::pow(2.0, e));
  } else {
    double a = xlo, b = xhi;
    xTicks = niceTicks(a, b);
  }
  const double xStep = xTicks.size() > 1 ? xTicks[1] - xTicks[0] : 1;
  for (double t : xTicks) {
    svg += "<line x1=\"" + num(X(t)) + "\" x2=\"" + num(X(t)) + "\" y1=\"" + num(top) + "\" y2=\"" + num(top + ph) +
           "\" stroke=\"#f0f0f0\"/>";
    svg += "<text x=\"" + num(X(t)) + "\" y=\"" + num(top + ph + 16) + "\" text-anchor=\"middle\" fill=\"#555\">" +
           tickLabel(t, spec.logX ? 1 : xStep) + "</text>\n";
  }
  svg += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(pw) + "\" height=\"" + num(ph) +
         "\" fill=\"none\" stroke=\"#999\"/>\n";
  svg += "<text x=\"" + num(left + pw / 2) + "\" y=\"" + num(top + ph + 34) + "\" text-anchor=\"middle\" fill=\"#333\">" +
         xmlEscape(spec.xLabel) + "</text>\n";
  svg += "<text transform=\"translate(14," + num(top + ph / 2) + ") rotate(-90)\" text-anchor=\"middle\" fill=\"#333\">" +
         xmlEscape(spec.yLabel) + "</text>\n";
  if (empty)
    svg += "<text x=\"" + num(left + pw / 2) + "\" y=\"" + num(top + ph / 2) +
           "\" text-anchor=\"middle\" fill=\"#888\">no data</text>\n";

  const auto& palette = chartPalette();
  for (const auto& s : spec.series) {
    const std::string color = palette[static_cast<size_t>(s.color) % palette.size()];
    std::string pts;
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y) || (spec.logX && x <= 0)) continue;
      pts += num(X(x)) + "," + num(Y(y)) + " ";
    }
    if (pts.empty()) continue;
    svg += "<polyline class=\"series\" data-name=\"" + xmlEscape(s.name) + "\" fill=\"none\" stroke=\"" + color +
           "\" stroke-width=\"" + (s.faint ? "1" : "2") + "\"" + (s.faint ? " stroke-opacity=\"0.3\"" : "") +
           " points=\"" + pts + "\"/>\n";
    if (s.markers)
      for (const auto& [x, y] : s.points)
        if (std::isfinite(x) && std::isfinite(y) && !(spec.logX && x <= 0))
          svg += "<circle cx=\"" + num(X(x)) + "\" cy=\"" + num(Y(y)) + "\" r=\"3\" fill=\"" + color + "\"/>";
    if (s.markers) svg += "\n";
  }
  for (size_t i = 0; i < legend.size(); ++i) {
    const double lx = left + static_cast<double>(i % 3) * (pw / 3);
    const double ly = top + ph + 56 + 20.0 * static_cast<double>(i / 3);
    const std::string color = palette[static_cast<size_t>(legend[i]->color) % palette.size()];
    svg += "<line x1=\"" + num(lx) + "\" x2=\"" + num(lx + 18) + "\" y1=\"" + num(ly - 4) + "\" y2=\"" + num(ly - 4) +
           "\" stroke=\"" + color + "\" stroke-width=\"2\"/><text x=\"" + num(lx + 24) + "\" y=\"" + num(ly) +
           "\" fill=\"#333\">" + xmlEscape(legend[i]->name) + "</text>\n";
  }
  svg += "</svg>";
  return svg;
}

}  // namespace crosslab::report
