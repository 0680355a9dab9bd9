/* kumi_info --mpit (info_mpit.c) */
#ifndef KUMI_INFO_MPIT_H
#define KUMI_INFO_MPIT_H
int kumi_info_mpit(int parsable);
#endif
