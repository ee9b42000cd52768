#include "core/cmdline_word.hpp"

#include <gtest/gtest.h>

namespace schedlab {
namespace {

TEST(CmdlineWord, SpacesPercentQuotesAndNonAsciiRoundTripAsOneWord) {
  const std::string path = "/home/dev/my linux/\"tip\" 100%/\xc3\xa9t\xc3\xa9\t";
  const auto word = encode_cmdline_word(path);
  EXPECT_EQ(word.find_first_of(" \t\"\x7f"), std::string::npos) << word;
  EXPECT_EQ(word, "/home/dev/my%20linux/%22tip%22%20100%25/%C3%A9t%C3%A9%09");
  EXPECT_EQ(decode_cmdline_word(word), path);
}

TEST(CmdlineWord, APlainWordIsItself) {
  EXPECT_EQ(encode_cmdline_word("/srv/linux-6.12"), "/srv/linux-6.12");
  EXPECT_EQ(decode_cmdline_word("/srv/linux-6.12"), "/srv/linux-6.12");
  EXPECT_EQ(decode_cmdline_word("%2f"), "/");
}

TEST(CmdlineWord, ATruncatedEscapeIsNotAValue) {
  EXPECT_EQ(decode_cmdline_word("a%2"), std::nullopt);
  EXPECT_EQ(decode_cmdline_word("a%"), std::nullopt);
  EXPECT_EQ(decode_cmdline_word("a%zz"), std::nullopt);
}

}  // namespace
}  // namespace schedlab
