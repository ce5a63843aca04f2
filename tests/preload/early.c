/* Blocks allocated in another library's constructor can be used, grown and
 * freed later. */
#include "tp.h"

extern void *early_big, *early_small, *early_mid;

int main(void)
{
	CHECK(early_big && early_small && early_mid);
	CHECK(((unsigned char *)early_big)[(6 << 20) - 1] == 0x42);
	if (getenv("HP_EXPECT_ACTIVE"))
		CHECK(tp_flags(early_big) & HOSTPIN_KIND_MALLOC);
	char *b = realloc(early_big, 12 << 20);
	CHECK(b && b[0] == 0x42 && b[(6 << 20) - 1] == 0x42);
	free(b);
	free(realloc(early_small, 4000));
	free(early_mid);
	puts("early: ok");
	return 0;
}
