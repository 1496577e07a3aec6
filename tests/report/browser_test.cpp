// The HTML report as a user opens it: written by stc, loaded in headless Chromium (Debian's chromium):
// no console message, the DOM holds the sections and one SVG per chart, and the screenshot shows the
// charts' colours (running green, stalled red). Without Chromium these tests skip, unless
// STC_REQUIRE_CHROMIUM is set (CI sets it: tools/install-deps.sh installs it).
#include <gtest/gtest.h>
#include <png.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/run_stc.h"

namespace stc::test {
namespace {

namespace fs = std::filesystem;

std::string chromium() {
  for (const char* name : {"chromium", "chromium-browser"}) {
    Outcome o = shell(std::string("command -v ") + name);
    if (o.code == 0) return o.out.substr(0, o.out.find('\n'));
  }
  return "";
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class Browser : public ::testing::Test {
 protected:
  void SetUp() override {
    browser_ = chromium();
    if (browser_.empty()) {
      if (std::getenv("STC_REQUIRE_CHROMIUM")) {
        FAIL() << "STC_REQUIRE_CHROMIUM is set and chromium is not installed";
      }
      GTEST_SKIP() << "chromium is not installed (tools/install-deps.sh installs it)";
    }
    dir_ = fs::temp_directory_path() / ("stc_browser_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Chromium headless on a page: its DOM after load, and the console messages it logged.
  struct Loaded {
    std::string dom;
    std::vector<std::string> console;
  };
  Loaded load(const fs::path& page) {
    std::string err = (dir_ / "chromium.err").string();
    // In a subshell: shell() sends the command's standard error to its output, the DOM's.
    Outcome o =
        shell("(" + browser_ +
              " --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 "
              "--user-data-dir=" +
              (dir_ / "profile").string() + " --dump-dom file://" + page.string() + " 2>" + err + ")");
    EXPECT_EQ(o.code, 0) << readAll(err);
    Loaded l{o.out, {}};
    std::istringstream lines(readAll(err));
    for (std::string line; std::getline(lines, line);)
      if (line.find(":CONSOLE") != std::string::npos) l.console.push_back(line);
    return l;
  }

  // A screenshot of the page's top, as RGB rows.
  struct Image {
    int width = 0, height = 0;
    std::vector<unsigned char> rgb;
    size_t pixels(unsigned char r, unsigned char g, unsigned char b, int tolerance = 6) const {
      size_t n = 0;
      for (size_t i = 0; i + 2 < rgb.size(); i += 3)
        n += std::abs(rgb[i] - r) <= tolerance && std::abs(rgb[i + 1] - g) <= tolerance &&
             std::abs(rgb[i + 2] - b) <= tolerance;
      return n;
    }
  };
  // A copy of the page with one more CSS rule (to hide a chart and see what it alone drew).
  fs::path restyled(const fs::path& page, const std::string& rule) {
    std::string html = readAll(page.string());
    size_t at = html.find("</style>");
    EXPECT_NE(at, std::string::npos);
    html.insert(at, rule);
    fs::path copy = dir_ / ("restyled_" + page.filename().string());
    std::ofstream(copy) << html;
    return copy;
  }
  Image screenshot(const fs::path& page, int width, int height) {
    fs::path png = dir_ / (page.stem().string() + ".png");
    Outcome o = shell(browser_ + " --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir=" +
                      (dir_ / "profile").string() + " --window-size=" + std::to_string(width) + "," +
                      std::to_string(height) + " --screenshot=" + png.string() + " file://" + page.string() +
                      " 2>/dev/null");
    EXPECT_EQ(o.code, 0) << o.out;
    Image image;
    png_image decoded{};
    decoded.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&decoded, png.c_str())) {
      ADD_FAILURE() << "no PNG at " << png;
      return image;
    }
    decoded.format = PNG_FORMAT_RGB;
    image.width = static_cast<int>(decoded.width);
    image.height = static_cast<int>(decoded.height);
    image.rgb.resize(PNG_IMAGE_SIZE(decoded));
    EXPECT_TRUE(png_image_finish_read(&decoded, nullptr, image.rgb.data(), 0, nullptr)) << decoded.message;
    return image;
  }

  std::string browser_;
  fs::path dir_;
};

// The detector of console messages works: a page with a script error is caught (else a silent browser
// would pass every test below).
TEST_F(Browser, ConsoleErrorsAreSeen) {
  fs::path page = dir_ / "bad.html";
  std::ofstream(page)
      << "<!DOCTYPE html><html><body><p>x</p><script>undefinedFunction();</script></body></html>";
  Loaded l = load(page);
  ASSERT_EQ(l.console.size(), 1u);
  EXPECT_NE(l.console[0].find("undefinedFunction is not defined"), std::string::npos);
}

TEST_F(Browser, GptMediumLayerReport) {
  fs::path page = dir_ / "layer.html";
  Outcome o =
      stc("simulate " STC_SOURCE_DIR "/models/graphs/gpt2_layer.yaml --ctx 1024 --html " + page.string());
  ASSERT_EQ(o.code, 0) << o.out;
  std::string html = readAll(page.string());
  EXPECT_LT(html.size(), 5u << 20);  // a GPT-2 medium layer's page stays under 5 MB
  Loaded l = load(page);
  EXPECT_TRUE(l.console.empty()) << l.console.front();
  for (const char* id : {"summary", "resources", "timeline", "fifos", "hbm"})
    EXPECT_EQ(count(l.dom, std::string("<section id=\"") + id + "\""), 1u) << id;
  EXPECT_EQ(count(l.dom, "<section id=\"deadlock\""), 0u);
  // One SVG per chart: resources, the Gantt, a curve per FIFO (as many as the compiled network has),
  // HBM bytes and busy over time.
  Outcome compiled = stc("compile " STC_SOURCE_DIR "/models/graphs/gpt2_layer.yaml -o " + (dir_ / "layer.yaml").string() +
                         " --json");
  ASSERT_EQ(compiled.code, 0) << compiled.out;
  size_t at = compiled.out.find("\"fifos\": ");
  ASSERT_NE(at, std::string::npos) << compiled.out;
  size_t fifos = std::stoul(compiled.out.substr(at + 9));
  EXPECT_GT(fifos, 100u);
  EXPECT_EQ(count(l.dom, "<svg"), 1u + 1u + fifos + 2u);
  EXPECT_EQ(count(l.dom, "<svg class=\"chart curve\""), fifos);
  Image shot = screenshot(page, 1280, 2000);
  ASSERT_EQ(shot.width, 1280);
  size_t all = static_cast<size_t>(shot.width) * static_cast<size_t>(shot.height);
  EXPECT_LT(shot.pixels(255, 255, 255, 2), all * 9 / 10);  // not blank
  // The Gantt itself draws running (green), stalled-on-FULL (red: the weight DMAs wait on the kernels) and
  // starved (blue) tasks: the colours' pixels with its bars against the same page with them hidden.
  Image bare = screenshot(restyled(page, ".gantt svg{visibility:hidden}"), 1280, 2000);
  for (auto [r, g, b] :
       {std::array<unsigned char, 3>{0x3f, 0x9b, 0x5f}, {0xd6, 0x45, 0x41}, {0x3b, 0x7d, 0xd8}})
    EXPECT_GT(shot.pixels(r, g, b), bare.pixels(r, g, b) + 2000) << int(r) << "," << int(g) << "," << int(b);
}

TEST_F(Browser, DeadlockReportDrawsTheCycle) {
  fs::path page = dir_ / "deadlock.html";
  Outcome o = stc("simulate " STC_SOURCE_DIR "/models/networks/fork_join.yaml --html " + page.string());
  ASSERT_EQ(o.code, 3) << o.out;  // a deadlock still writes its report
  Loaded l = load(page);
  EXPECT_TRUE(l.console.empty()) << l.console.front();
  EXPECT_EQ(count(l.dom, "<section id=\"deadlock\""), 1u);
  EXPECT_EQ(count(l.dom, "<svg class=\"chart waitfor\""), 1u);
  EXPECT_NE(l.dom.find("deepen <b>a_c</b> from 2 to 64"), std::string::npos);
  // The cycle's red arrows: the graph's red pixels against the same page with the graph hidden.
  Image shot = screenshot(page, 1280, 1000);
  Image bare = screenshot(restyled(page, "svg.waitfor{visibility:hidden}"), 1280, 1000);
  EXPECT_GT(shot.pixels(0xd6, 0x45, 0x41), bare.pixels(0xd6, 0x45, 0x41) + 300);
}

TEST_F(Browser, DecodeReport) {
  fs::path page = dir_ / "decode.html";
  Outcome o = stc("simulate " STC_SOURCE_DIR "/models/gpt2-tiny.yaml --decode 8:8 --html " + page.string());
  ASSERT_EQ(o.code, 0) << o.out;
  Loaded l = load(page);
  EXPECT_TRUE(l.console.empty()) << l.console.front();
  EXPECT_EQ(count(l.dom, "<section id=\"decode\""), 1u);
  // Resources, tokens/s against the roofline, one step per layer and head; then the decode layer's
  // Gantt, HBM bytes and busy, and a curve per FIFO.
  EXPECT_EQ(count(l.dom, "<section id=\"decode-layer\""), 1u);
  size_t curves = count(l.dom, "<svg class=\"chart curve\"");
  EXPECT_GT(curves, 10u);
  EXPECT_EQ(count(l.dom, "<svg"), 3u + 1u + 2u + curves);
  Image shot = screenshot(page, 1280, 1400);
  Image bare = screenshot(restyled(page, "svg.decode-step{visibility:hidden}"), 1280, 1400);
  EXPECT_GT(shot.pixels(0x7a, 0x4f, 0xc9), bare.pixels(0x7a, 0x4f, 0xc9) + 100);  // the LM head's segment
}

}  // namespace
}  // namespace stc::test
