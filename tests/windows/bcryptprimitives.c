//! bcryptprimitives.dll for Wine 8, which lacks it: Rust's std on Windows takes its random bytes
//! from `ProcessPrng` there. Built with mingw-w64 by scripts/windows-run.sh into the Wine prefix's
//! system32 only (never shipped); `BCryptGenRandom` with the system's generator, as Windows does.
#include <windows.h>
#include <bcrypt.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG n = len > 0x7fffffffu ? 0x7fffffffu : (ULONG)len;
        if (BCryptGenRandom(NULL, data, n, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0) {
            return FALSE;
        }
        data += n;
        len -= n;
    }
    return TRUE;
}
