/*
 * params_json.c -- one JSON member as a parameter's value (histd/params.h).
 *
 * The parameter table knows nothing of cJSON; the service meets parameters
 * as JSON twice, in request bodies (routes_jobs.c) and in the store's
 * params column (store.c), and both come through here, so a JSON type is
 * read the same way in both.
 */
#include <stdlib.h>

#include "json_util.h"

const char *param_value_from_json(const histd_param *row, const cJSON *f, histd_value *v,
                                  double **numbers) {
  *v = (histd_value){HISTD_VALUE_NULL, 0, false, NULL, NULL, 0};
  *numbers = NULL;
  if (cJSON_IsNull(f))
    return NULL; /* the default */
  switch (row->type) {
  case HISTD_PARAM_NUMBER:
  case HISTD_PARAM_COUNT:
    v->kind = HISTD_VALUE_NUMBER;
    v->number = f->valuedouble;
    return cJSON_IsNumber(f) ? NULL : "a number";
  case HISTD_PARAM_STRING:
    v->kind = HISTD_VALUE_STRING;
    v->string = f->valuestring;
    return cJSON_IsString(f) ? NULL : "a string";
  case HISTD_PARAM_BOOL:
    v->kind = HISTD_VALUE_BOOL;
    v->boolean = cJSON_IsTrue(f);
    return cJSON_IsBool(f) ? NULL : "true or false";
  case HISTD_PARAM_NUMBERS:
    break;
  }
  if (!cJSON_IsArray(f))
    return "an array of numbers";
  int count = cJSON_GetArraySize(f), i = 0;
  if (count > 0 && (*numbers = malloc((size_t)count * sizeof **numbers)) == NULL)
    return "an array of numbers that fits in memory";
  for (const cJSON *e = f->child; e != NULL; e = e->next) {
    if (!cJSON_IsNumber(e)) {
      free(*numbers);
      *numbers = NULL;
      return "an array of numbers";
    }
    (*numbers)[i++] = e->valuedouble;
  }
  v->kind = HISTD_VALUE_NUMBERS;
  v->numbers = *numbers;
  v->count = (size_t)count;
  return NULL;
}
