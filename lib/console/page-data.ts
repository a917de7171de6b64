import "server-only";
import { notFound } from "next/navigation";
import { AppError } from "@/lib/errors";

/** For pages: a NOT_FOUND from the data layer (unknown id, another shop's id) renders the 404 page. */
export async function orNotFound<T>(load: Promise<T>): Promise<T> {
  try {
    return await load;
  } catch (err) {
    if (err instanceof AppError && err.code === "NOT_FOUND") notFound();
    throw err;
  }
}
